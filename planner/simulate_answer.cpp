#include "simulate_answer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "captured_model.hpp"
#include "accuracy.hpp"
#include "config_error.hpp"
#include "byte_counts.hpp"
#include "enum_names.hpp"
#include "field_flags.hpp"
#include "result_json.hpp"
#include "strategy_rules.hpp"

namespace trainsim::planner {
namespace {
constexpr double GiB = 1073741824.0;

// What the memory model shows overflowing, beyond its tolerance, with the figures.
std::string overflow_reason(const MemoryAnswer& m) {
  const auto& st = m.estimate.stages[static_cast<std::size_t>(m.estimate.peak_stage)];
  const MemoryLimits& l = m.fit.limits;
  std::vector<std::string> parts;
  if (m.fit.gpu == Verdict::OVERFLOWS) {
    parts.push_back(fmt::format("GPU memory: {:.2f} GiB needed by the memory model, {:.2f} GiB usable less {:g}% headroom", st.gpu_bytes() / GiB,
                                l.gpu_limit_bytes / GiB, 100 * l.headroom));
  }
  if (m.fit.cpu == Verdict::OVERFLOWS) {
    parts.push_back(fmt::format("host memory: {:.1f} GiB needed per node, {:.1f} GiB available", m.estimate.peak_node.cpu_bytes / GiB,
                                l.host_bytes / GiB));
  }
  if (m.fit.nvme == Verdict::OVERFLOWS) {
    parts.push_back(fmt::format("storage: {:.1f} TB needed per node, {:.1f} TB available", m.estimate.peak_node.nvme_bytes / 1e12,
                                l.storage_bytes / 1e12));
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out + " (beyond the memory model's tolerance: the replay would overflow too)";
}

// Combinations the stacks do not run (or trainsim does not model) are refused with the reason,
// naming the flag to change: the REPLAY rules of workloads/strategy_rules.hpp.
void reject_unsimulated(const wl::ModelSpec& m, const wl::Strategy& s) {
  for (const wl::RuleViolation& v : wl::validate(m, s, wl::RuleScope::REPLAY)) {
    if (v.scope != wl::RuleScope::REPLAY) continue;
    const std::string flag = flag_of(v.field);
    throw ConfigError(flag, flag, v.expected, v.got);
  }
}

}  // namespace

SimulateAnswer answer_simulate(Request request, const sim::SimOptions& options) {
  const auto& s = request.inputs.strategy;
  reject_unsimulated(request.inputs.model, s);
  SimulateAnswer a;
  a.memory = answer_memory(std::move(request));
  const Request& r = a.memory.request;
  if (r.infeasible_reason) {
    a.result.fits = false;
    a.result.infeasible_reason = r.infeasible_reason;
    return a;
  }
  if (!a.memory.fit.may_fit()) {
    // Over by more than the memory model's tolerance (memory_fit.hpp): the replay would overflow too.
    a.result.fits = false;
    a.result.infeasible_reason = "does not fit: " + overflow_reason(a.memory);
    return a;
  }
  const double ops = sim::estimated_replay_ops(r.inputs.model, s, r.profile, options);
  if (ops > sim::MAX_REPLAY_OPS) {
    a.result.fits = false;
    // A limit of trainsim, not of the configuration: said as such, never as "does not fit".
    a.result.infeasible_reason = fmt::format(
        "a limit of trainsim, not of this configuration: {} would hold about {:.3g} million ops, beyond trainsim's limit of "
        "{:.0f} million (about 8 GiB and a minute); use fewer micro-batches per step ({} now){}",
        options.fold_micro_batches ? "even the smallest replay it could extrapolate this step from" : "its replay",
        ops / 1e6, sim::MAX_REPLAY_OPS / 1e6, s.micro_batches(), options.fold_micro_batches ? "" : ", or let it fold (no --no-fold)");
    return a;
  }
  const auto start = std::chrono::steady_clock::now();
  a.result = sim::simulate(r.inputs.model, s, r.profile, a.memory.estimate, options);
  if (r.inputs.model.capture) {
    a.result.assumptions.push_back("each layer's, the embedding's and the head's kernels from the capture " +
                                   r.inputs.model.capture->describe +
                                   ", costed by the profile's tables; gradient accumulation, states, communication and the "
                                   "activations kept from trainsim's model of the stack");
  }
  a.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // One truth for memory (memory_fit.hpp): the replay's peaks, whatever the memory model said.
  if (const std::optional<MemoryMisfit> misfit = replay_misfit(a.result, a.memory.fit.limits)) {
    a.result.fits = false;
    a.result.infeasible_reason = "does not fit: " + misfit->message;
  }
  return a;
}

namespace {

constexpr const char* RESERVED_BASIS =
    "reserved peak: the replay's memory events through a model of PyTorch's caching allocator, one request an event "
    "(sim/costs/caching_allocator.hpp; its error against the measured runs' max_memory_reserved is in "
    "reports/validation/report.md, peak_reserved); it decides whether the step fits, within the usable memory less the "
    "headroom (planner/memory_fit.hpp, --memory-headroom)";

}  // namespace

std::string no_trace_reason(const SimulateAnswer& a) {
  if (a.result.simulated) return {};
  std::string reason = a.result.infeasible_reason.value_or("no reason given");
  const std::string prefix = "does not fit: ";
  if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
  return "the configuration does not fit, so it was not simulated (" + reason + ")";
}

nlohmann::ordered_json simulate_json(const SimulateAnswer& a) {
  nlohmann::ordered_json j = result_header(a.memory.request, "simulate", SIMULATE_SCHEMA_VERSION);
  // The result in its one public encoding (result_json.hpp), with the memory model's figure for
  // comparison placed before the verdict.
  const auto& est = a.memory.estimate;
  nlohmann::ordered_json result = result_json(a.result);
  for (auto& [key, value] : result.items()) {
    if (key == "fits") j["memory_model_gpu_bytes"] = json_bytes(est.stages[static_cast<std::size_t>(est.peak_stage)].gpu_bytes());
    j[key] = std::move(value);
  }
  if (a.result.simulated) {
    j["peak_reserved_basis"] = RESERVED_BASIS;
    j["memory_limit_bytes"] = json_bytes(a.memory.fit.limits.gpu_limit_bytes);
    j["memory_headroom"] = a.memory.fit.limits.headroom;
  }
  j["accuracy"] = accuracy_json(accuracy_card(a.memory.request.inputs.strategy, a.memory.request.profile));
  if (a.memory.request.inputs.model.capture) {
    j["accuracy_captured_layers"] = accuracy_json(captured_accuracy_card(a.memory.request.inputs.strategy, a.memory.request.profile));
  }
  return j;
}

std::string simulate_table(const SimulateAnswer& a) {
  const auto& r = a.result;
  const Request& q = a.memory.request;
  const auto& s = q.inputs.strategy;
  std::string out = fmt::format("trainsim simulate: {} ({}) on {} x {} ({} GPUs)\n", printable(q.inputs.model.name),
                                human_count(a.memory.estimate.total_params), s.nodes, printable(q.profile.name), s.gpus);
  const std::string pipeline =
      s.pp > 1 ? fmt::format(" x pp {} ({}{})", s.pp, wl::to_string(s.schedule), s.vpp > 1 ? fmt::format(", {} chunks", s.vpp) : "")
               : std::string();
  out += fmt::format("  dp {} x tp {}{}{}, ZeRO-{}{}{}{}{}, micro-batch {} x {} micro-batches, seq {}, {}\n\n", s.dp, s.tp,
                     s.sp && s.tp > 1 ? " (sp)" : "", pipeline, s.zero_stage, s.offload_params != wl::OffloadTarget::NONE ? ", params -> " + std::string(wl::to_string(s.offload_params)) : "",
                     s.offload_optimizer != wl::OffloadTarget::NONE ? ", optimizer -> " + std::string(wl::to_string(s.offload_optimizer)) : "",
                     s.recompute != wl::Recompute::NONE ? ", recompute " + std::string(wl::to_string(s.recompute)) : "",
                     s.l2l ? ", L2L" : s.delayed_update ? ", delayed update" : "", s.micro_batch, s.micro_batches(), s.seq,
                     wl::to_string(q.inputs.model.numerics));
  if (!r.simulated) {
    out += "Not simulated: " + r.infeasible_reason.value_or("unknown") + "\n";
    return out + "\n" + accuracy_text(accuracy_card(s, q.profile), "this configuration");
  }
  out += fmt::format("  {:<34}{:>12.4f} s\n", "step time", r.step_time_s);
  out += fmt::format("  {:<34}{:>12.1f} TFLOP/s ({:.1f} with recompute)\n", "per GPU (model FLOPs)", r.tflops_per_gpu,
                     r.hardware_tflops_per_gpu);
  out += fmt::format("  {:<34}{:>12.0f} tokens/s, {:.2f} samples/s\n", "throughput", r.tokens_per_s, r.samples_per_s);
  out += fmt::format("  {:<34}{:>12.1f} %\n", "bubble (idle)", 100 * r.bubble_fraction);
  const MemoryLimits& lim = a.memory.fit.limits;
  out += fmt::format("  {:<34}{:>12.2f} GiB\n", "peak GPU memory allocated", r.peak_memory_bytes / GiB);
  out += fmt::format("  {:<34}{:>12.2f} GiB of {:.2f} ({:.2f} usable less {:g}% headroom)  {}\n", "peak GPU memory reserved",
                     r.peak_reserved_bytes / GiB, lim.gpu_limit_bytes / GiB, lim.gpu_usable_bytes / GiB, 100 * lim.headroom,
                     r.peak_reserved_bytes <= lim.gpu_limit_bytes ? "fits" : "OVERFLOWS");
  out += fmt::format("  {:<34}{:>12.2f} GiB per node\n", "peak host memory", r.host_peak_bytes / GiB);
  if (r.storage_peak_bytes > 0) out += fmt::format("  {:<34}{:>12.2f} TB per node\n", "storage in use", r.storage_peak_bytes / 1e12);
  const auto& g = r.per_gpu.front();
  const double step = r.step_time_s;
  out += r.per_gpu.size() > 1 ? "\nWhere the first stage's step goes\n" : "\nWhere a GPU's step goes\n";
  auto row = [&](const char* what, double seconds) {
    const int bar = static_cast<int>(std::lround(40 * seconds / step));
    out += fmt::format("  {:<26}{:>10.4f} s {:>6.1f} %  {}\n", what, seconds, 100 * seconds / step, std::string(static_cast<std::size_t>(std::max(0, bar)), '#'));
  };
  row("compute", g.compute_s);
  row("exposed communication", g.exposed_communication_s);
  row("exposed offload I/O", g.exposed_offload_io_s);
  row("optimizer", g.optimizer_s);
  row("idle", g.idle_s);
  if (r.per_gpu.size() > 1) {
    // Stages whose times agree to the printed digit are one row (the middle stages of a long
    // pipeline); their peak memory is shown as a range.
    out += "\nPer stage                compute   exposed comm       idle    peak GiB\n";
    auto key = [](const sim::GpuResult& x) {
      return fmt::format("{:.4f} {:.4f} {:.4f}", x.compute_s, x.exposed_communication_s, x.idle_s);
    };
    for (std::size_t i = 0; i < r.per_gpu.size();) {
      std::size_t j = i;
      double low = r.per_gpu[i].peak_memory_bytes, high = low;
      while (j + 1 < r.per_gpu.size() && key(r.per_gpu[j + 1]) == key(r.per_gpu[i])) {
        ++j;
        low = std::min(low, r.per_gpu[j].peak_memory_bytes);
        high = std::max(high, r.per_gpu[j].peak_memory_bytes);
      }
      const auto& x = r.per_gpu[i];
      const std::string stages = i == j ? fmt::format("stage {}", x.stage) : fmt::format("stages {}-{}", x.stage, r.per_gpu[j].stage);
      const std::string peak = low == high ? fmt::format("{:.2f}", high / GiB) : fmt::format("{:.2f}-{:.2f}", low / GiB, high / GiB);
      out += fmt::format("  {:<16}{:>10.4f} s {:>10.4f} s {:>8.4f} s {:>11}\n", stages, x.compute_s, x.exposed_communication_s,
                         x.idle_s, peak);
      i = j + 1;
    }
  }
  if (!r.fits) {
    std::string reason = r.infeasible_reason.value_or("");
    if (reason.starts_with("does not fit: ")) reason.erase(0, 14);
    out += "\nDoes not fit: " + reason + "\n";
  }
  out += fmt::format("\nSimulated {} GPUs on {} nodes ({} ops, {} SimGrid activities, {:.2f} s wall)\n", r.simulated_gpus,
                     r.simulated_nodes, r.ops, r.activities, a.wall_s);
  for (const auto& note : r.folding) out += "Folded: " + note + "\n";
  for (const auto& note : r.notes) out += "Note: " + note + "\n";
  for (const auto& note : r.assumptions) out += "Basis: " + note + "\n";
  out += std::string("Basis: ") + RESERVED_BASIS + "\n";
  out += "\n" + accuracy_text(accuracy_card(s, q.profile), "this configuration");
  if (q.inputs.model.capture) {
    out += "With the layers from captures (reports/validation/captured_models):\n" +
           accuracy_text(captured_accuracy_card(s, q.profile), "this configuration");
  }
  return out;
}

}  // namespace trainsim::planner
