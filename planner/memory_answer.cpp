#include "memory_answer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "config_error.hpp"
#include "byte_counts.hpp"
#include "enum_names.hpp"

namespace trainsim::planner {
namespace {

constexpr double GiB = 1073741824.0;

std::string mark(Verdict v) { return v == Verdict::FITS ? "fits" : v == Verdict::NEAR_LIMIT ? "NEAR THE LIMIT" : "OVERFLOWS"; }

// Bytes are whole numbers in the JSON: ZeRO pads shards to whole elements, and activation terms
// with a /t split are rounded to the nearest byte (byte_counts.hpp: exact below 2^53).
nlohmann::ordered_json whole(double bytes) { return json_bytes(bytes); }

nlohmann::ordered_json placement_json(const wl::Placement& p) {
  return {{"gpu", whole(p.gpu)}, {"cpu", whole(p.cpu)}, {"nvme", whole(p.nvme)}};
}

double activations_total(const wl::StageMemory& st) {
  return st.activations.stored_bytes + st.activations.checkpoint_bytes + st.activations.working_bytes;
}

nlohmann::ordered_json stage_json(const wl::StageMemory& st, const MemoryFit& fit) {
  nlohmann::ordered_json j;
  j["stage"] = st.stage;
  j["params_on_rank"] = st.params_on_rank;
  j["params_bytes"] = whole(st.params_bytes);
  j["grads_bytes"] = whole(st.grads_bytes);
  j["optimizer_bytes"] = whole(st.optimizer_bytes);
  j["model_states_bytes"] = whole(st.model_states_bytes());
  j["activations_bytes"] = whole(activations_total(st));
  j["buffers_bytes"] = whole(st.buffers.gpu_total());
  j["total_bytes"] = whole(st.gpu_bytes());
  j["capacity_bytes"] = whole(fit.limits.gpu_capacity_bytes);
  j["usable_bytes"] = whole(fit.limits.gpu_usable_bytes);
  j["limit_bytes"] = whole(fit.limits.gpu_limit_bytes);
  const Verdict verdict = model_verdict(st.gpu_bytes(), fit.limits.gpu_limit_bytes);
  j["fits"] = verdict == Verdict::FITS;
  j["verdict"] = to_string(verdict);
  nlohmann::ordered_json placement;
  placement["params"] = placement_json(st.params_at);
  placement["grads"] = placement_json(st.grads_at);
  placement["optimizer"] = placement_json(st.optimizer_at);
  wl::Placement act = st.activations.at;
  act.gpu += st.activations.working_bytes;
  placement["activations"] = placement_json(act);
  j["placement"] = placement;
  const auto& a = st.activations;
  j["activations"] = {{"layers", a.layers},
                      {"in_flight_microbatches", a.in_flight_microbatches},
                      {"per_layer_stored_bytes", whole(a.per_layer_stored_bytes)},
                      {"per_layer_full_bytes", whole(a.per_layer_full_bytes)},
                      {"stored_bytes", whole(a.stored_bytes)},
                      {"checkpoint_bytes", whole(a.checkpoint_bytes)},
                      {"working_bytes", whole(a.working_bytes)}};
  const auto& b = st.buffers;
  j["buffers"] = {{"gathered_params_bytes", whole(b.gathered_params_bytes)},
                  {"staging_bytes", whole(b.staging_bytes)},
                  {"comm_bucket_bytes", whole(b.comm_bucket_bytes)},
                  {"logits_loss_bytes", whole(b.logits_loss_bytes)},
                  {"weight_stash_bytes", whole(b.weight_stash_bytes)},
                  {"receive_buffer_bytes", whole(b.receive_buffer_bytes)},
                  {"pinned_host_bytes", whole(b.pinned_host_bytes)}};
  return j;
}

std::string strategy_line(const Request& r) {
  const wl::Strategy& s = r.inputs.strategy;
  std::string line = fmt::format("dp {} x tp {} x pp {}", s.dp, s.tp, s.pp);
  if (s.vpp > 1) line += fmt::format(" (vpp {})", s.vpp);
  if (s.pp > 1) line += fmt::format(", {} schedule, {} micro-batches", wl::to_string(s.schedule), s.micro_batches());
  if (s.sp) line += ", sequence parallel";
  line += fmt::format(", ZeRO-{}", s.zero_stage);
  if (s.offload_params != wl::OffloadTarget::NONE) line += fmt::format(", params -> {}", wl::to_string(s.offload_params));
  if (s.offload_optimizer != wl::OffloadTarget::NONE) {
    line += fmt::format(", optimizer -> {}", wl::to_string(s.offload_optimizer));
  }
  if (s.recompute != wl::Recompute::NONE) line += fmt::format(", recompute {}", wl::to_string(s.recompute));
  if (s.offload_activations != wl::ActivationOffload::NONE) line += ", checkpoints -> cpu";
  if (r.inputs.model.has_architecture()) {
    line += fmt::format(", micro-batch {} x seq {}, {}", s.micro_batch, s.seq, wl::to_string(r.inputs.model.numerics));
  }
  return line;
}

}  // namespace

MemoryAnswer answer_memory(Request request) {
  MemoryAnswer a;
  a.request = std::move(request);
  a.estimate = wl::estimate_memory(a.request.inputs.model, a.request.inputs.strategy, a.request.profile.gpus_per_node());
  a.fit = check_memory_fit(a.estimate, a.request.profile, a.request.memory_headroom);
  return a;
}

nlohmann::ordered_json memory_json(const MemoryAnswer& a) {
  const auto& est = a.estimate;
  nlohmann::ordered_json j = result_header(a.request, "memory", MEMORY_SCHEMA_VERSION);
  const auto& peak = est.stages[static_cast<std::size_t>(est.peak_stage)];
  j["per_gpu"] = stage_json(peak, a.fit);
  j["per_stage"] = nlohmann::ordered_json::array();
  for (const auto& st : est.stages) j["per_stage"].push_back(stage_json(st, a.fit));
  const auto& s = a.request.inputs.strategy;
  const int gpn = a.request.profile.gpus_per_node();
  j["per_node"] = {{"node", est.peak_node_index},
                   {"gpus", std::min(gpn, s.gpus - est.peak_node_index * gpn)},
                   {"cpu_bytes", whole(est.peak_node.cpu_bytes)},
                   {"nvme_bytes", whole(est.peak_node.nvme_bytes)},
                   {"cpu_capacity_bytes", whole(a.fit.limits.host_bytes)},
                   {"nvme_capacity_bytes", whole(a.fit.limits.storage_bytes)},
                   {"fits_cpu", a.fit.cpu == Verdict::FITS},
                   {"fits_nvme", a.fit.nvme == Verdict::FITS},
                   {"verdict_cpu", to_string(a.fit.cpu)},
                   {"verdict_nvme", to_string(a.fit.nvme)}};
  j["fits"] = a.fits();
  j["verdict"] = a.request.infeasible_reason ? "infeasible" : a.fit.fits() ? "fits" : a.fit.may_fit() ? "near the limit: simulate decides" : "overflows";
  j["memory_headroom"] = a.request.memory_headroom;
  j["model_tolerance"] = {{"over", MEMORY_MODEL_OVER}, {"under", MEMORY_MODEL_UNDER}, {"under_bytes", MEMORY_MODEL_UNDER_BYTES}};
  j["overflow"] = a.fit.overflow;
  j["infeasible_reason"] = a.request.infeasible_reason ? nlohmann::ordered_json(*a.request.infeasible_reason)
                                                       : nlohmann::ordered_json(nullptr);
  j["assumptions"] = est.assumptions;
  return j;
}

std::string memory_table(const MemoryAnswer& a) {
  const auto& est = a.estimate;
  const auto& r = a.request;
  const auto& st = est.stages[static_cast<std::size_t>(est.peak_stage)];
  const auto& s = r.inputs.strategy;
  std::string out;
  out += fmt::format("trainsim memory: {} ({} parameters) on {} x {} ({} x {} per node)\n", printable(r.inputs.model.name),
                     human_count(est.total_params), s.nodes, printable(r.profile.name), r.profile.gpus_per_node(),
                     r.profile.gpu.model);
  out += fmt::format("  {} GPUs: {}\n\n", s.gpus, strategy_line(r));

  auto gib = [](double bytes) { return fmt::format("{:10.2f}", bytes / GiB); };
  auto blank_or = [&](double bytes) { return bytes == 0 ? fmt::format("{:>10}", "-") : gib(bytes); };
  const std::string heading =
      s.pp > 1 ? fmt::format("Per GPU (stage {} of {}, the largest)", st.stage, s.pp) : std::string("Per GPU");
  out += fmt::format("{:<44}{:>10} {:>10} {:>10} {:>10}\n", heading, "total GiB", "on GPU", "on CPU", "on NVMe");
  auto row = [&](const std::string& label, double total, const wl::Placement& p) {
    out += fmt::format("  {:<42}{} {} {} {}\n", label, gib(total), blank_or(p.gpu), blank_or(p.cpu), blank_or(p.nvme));
  };
  // Bytes per parameter as the training stack keeps them (PyTorch's autocast: fp32 parameters and
  // gradients, two fp32 moments; the seeds' 2 + 2 + 12 for the idealized stack).
  const wl::StackStates b = wl::stack_states(s.stack, r.inputs.model.numerics, s.zero_stage, s.micro_batches());
  row(fmt::format("parameters ({:g} B each)", b.params), st.params_bytes, st.params_at);
  row(fmt::format("gradients ({:g} B each)", b.grads), st.grads_bytes, st.grads_at);
  row(fmt::format("optimizer states ({:g} B each)", b.optimizer), st.optimizer_bytes, st.optimizer_at);
  wl::Placement states{st.params_at.gpu + st.grads_at.gpu + st.optimizer_at.gpu,
                       st.params_at.cpu + st.grads_at.cpu + st.optimizer_at.cpu,
                       st.params_at.nvme + st.grads_at.nvme + st.optimizer_at.nvme};
  row("model states", st.model_states_bytes(), states);
  if (est.activations_modeled) {
    const auto& act = st.activations;
    wl::Placement at = act.at;
    at.gpu += act.working_bytes;
    at.gpu += act.autocast_cache_bytes;
    row(fmt::format("activations ({:g} micro-batch{} in flight)", act.in_flight_microbatches,
                    act.in_flight_microbatches == 1 ? "" : "es"),
        act.stored_bytes + act.checkpoint_bytes + act.working_bytes + act.autocast_cache_bytes, at);
    if (act.checkpoint_bytes > 0) {
      out += fmt::format("    {:<40}{}\n", "of which layer checkpoints", gib(act.checkpoint_bytes));
      out += fmt::format("    {:<40}{}\n", "of which one layer recomputed", gib(act.working_bytes));
    }
    if (act.autocast_cache_bytes > 0) {
      out += fmt::format("    {:<40}{}\n", "of which autocast's cached weight casts", gib(act.autocast_cache_bytes));
    }
  } else {
    out += fmt::format("  {:<42}{:>10}\n", "activations", "n/a");
  }
  const auto& buf = st.buffers;
  row("working buffers", buf.gpu_total(), {buf.gpu_total(), 0, 0});
  auto detail = [&](const char* label, double bytes) {
    if (bytes > 0) out += fmt::format("    {:<40}{}\n", label, gib(bytes));
  };
  detail("gathered parameters + prefetch", buf.gathered_params_bytes);
  detail("fetched parameter shards / layers", buf.staging_bytes);
  detail("communication buckets", buf.comm_bucket_bytes);
  detail("logits for the loss", buf.logits_loss_bytes);
  detail("stashed weight versions", buf.weight_stash_bytes);
  detail("pipeline receive buffers", buf.receive_buffer_bytes);
  const MemoryLimits& lim = a.fit.limits;
  out += fmt::format("  {:<42}{} of {:.2f} ({:.0f} GiB less {:.2f} reserved, less {:g}% headroom)  {}\n", "resident on the GPU",
                     gib(st.gpu_bytes()), lim.gpu_limit_bytes / GiB, lim.gpu_capacity_bytes / GiB, r.profile.gpu.reserved_GiB,
                     100 * lim.headroom, mark(a.fit.gpu));

  const int gpn = r.profile.gpus_per_node();
  out += fmt::format("\nPer node (node {}, {} GPUs)\n", est.peak_node_index,
                     std::min(gpn, s.gpus - est.peak_node_index * gpn));
  out += fmt::format("  {:<42}{} of {:.2f}  {}\n", "host memory (GiB)", gib(est.peak_node.cpu_bytes), lim.host_bytes / GiB,
                     mark(a.fit.cpu));
  out += fmt::format("  {:<42}{} of {:.2f}  {}\n", fmt::format("{} (GiB)", hw::to_string(r.profile.storage.kind)),
                     gib(est.peak_node.nvme_bytes), lim.storage_bytes / GiB, mark(a.fit.nvme));
  const double whole_model = est.total_params * (b.params + b.grads + b.optimizer);
  out += fmt::format("\nModel states of the whole model: {:.2f} TB ({:.2f} TiB)\n", whole_model / 1e12,
                     whole_model / 1099511627776.0);
  if (r.infeasible_reason) {
    out += "Infeasible: " + *r.infeasible_reason + "\n";
  } else if (a.fit.fits()) {
    out += fmt::format("Fits: yes (by the memory model, with its tolerance against the replay to spare: {:g}% and {:g} GiB)\n",
                       100 * MEMORY_MODEL_UNDER, MEMORY_MODEL_UNDER_BYTES / GiB);
  } else if (a.fit.may_fit()) {
    out += "Fits: near the limit (within the memory model's tolerance of it): `trainsim simulate` decides, from the replayed peak\n";
  } else {
    std::string tiers;
    for (const auto& t : a.fit.overflow) tiers += (tiers.empty() ? "" : ", ") + t;
    out += "Fits: NO (" + tiers + " overflows)\n";
    if (a.fit.gpu == Verdict::OVERFLOWS && s.recompute == wl::Recompute::NONE && est.activations_modeled) {
      out += "  hint: activations dominate? try --recompute full (and --offload-activations cpu)\n";
    }
  }
  for (const auto& note : est.assumptions) out += "Note: " + note + "\n";
  for (const auto& note : r.inputs.notes) out += "Note: " + note + "\n";
  for (const auto& key : r.inputs.no_effect) out += "No effect on memory: " + key + "\n";
  if (!r.inputs.model.ignored_keys.empty()) {
    std::string keys;
    for (const auto& k : r.inputs.model.ignored_keys) keys += (keys.empty() ? "" : ", ") + k;
    out += "Hugging Face keys not used: " + keys + "\n";
  }
  return out;
}

std::string memory_csv(const MemoryAnswer& a) {
  std::string out =
      "stage,params_bytes,grads_bytes,optimizer_bytes,model_states_bytes,activations_bytes,buffers_bytes,total_bytes,"
      "cpu_bytes,nvme_bytes,fits\n";
  for (const auto& st : a.estimate.stages) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", st.stage, bytes_text(st.params_bytes),
                       bytes_text(st.grads_bytes), bytes_text(st.optimizer_bytes), bytes_text(st.model_states_bytes()),
                       bytes_text(activations_total(st)), bytes_text(st.buffers.gpu_total()), bytes_text(st.gpu_bytes()),
                       bytes_text(st.cpu_bytes()), bytes_text(st.nvme_bytes()),
                       model_verdict(st.gpu_bytes(), a.fit.limits.gpu_limit_bytes) == Verdict::FITS ? "true" : "false");
  }
  return out;
}

}  // namespace trainsim::planner
