#include "plan_answer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "candidate_layers.hpp"
#include "config_error.hpp"
#include "byte_counts.hpp"
#include "enum_names.hpp"
#include "model_params.hpp"
#include "request.hpp"
#include "result_json.hpp"

namespace trainsim::planner {
namespace {

std::string on_off(wl::OffloadTarget t) { return std::string(wl::to_string(t)); }

// Whether any strategy of the group is legal and fits the memory model (no replay).
bool has_candidate(const SweepInputs& in, const SweepGroup& g, ReplayExecutor& executor, Progress& progress,
                   std::optional<GroupResult>* out) {
  SweepGroup one = g;
  one.top_k = 0;  // first without a replay: most node counts below the answer fit nothing
  if (run_sweep(in, {one}, executor, progress).front().candidates == 0) return false;
  one.top_k = 1;
  std::vector<GroupResult> r = run_sweep(in, {one}, executor, progress);
  const bool found = !r.front().ranked.empty();
  if (found) *out = std::move(r.front());
  return found;
}

}  // namespace

EntryMetrics metrics_of(const RankedEntry& e, const PlanQuestion& q) {
  const wl::Strategy& s = e.candidate.strategy;
  const sim::SimResult& r = e.result;
  EntryMetrics m;
  m.nodes = s.nodes;
  m.gpus = s.gpus;
  m.step_time_s = r.step_time_s;
  m.tflops_per_gpu = r.tflops_per_gpu;
  m.tokens_per_s = r.tokens_per_s;
  m.peak_memory_bytes = r.peak_memory_bytes;
  m.peak_reserved_bytes = r.peak_reserved_bytes;
  m.host_peak_bytes = r.host_peak_bytes;
  m.storage_peak_bytes = r.storage_peak_bytes;
  // Training runs whole steps: fewer tokens than one step's still take that step (a global batch of
  // 2^31 sequences would otherwise "train" 31B tokens in a fraction of its one 306-day step).
  const double step_tokens = static_cast<double>(s.global_batch) * static_cast<double>(s.seq);
  m.time_to_train_s = r.tokens_per_s > 0 ? std::max(q.tokens, step_tokens) / r.tokens_per_s : 0.0;
  m.time_to_train_days = m.time_to_train_s / 86400.0;
  const double hours = m.time_to_train_s / 3600.0;
  m.gpu_hours = s.gpus * hours;
  m.cost_usd = m.gpu_hours * q.profile.cost.price_per_gpu_hour_usd;
  // The profile's power is the node's maximum (datasheet): an upper estimate of the energy.
  m.energy_kwh = s.nodes * q.profile.cost.power_per_node_kW * hours;
  m.co2_kg = m.energy_kwh * q.grid_kg_per_kwh;
  return m;
}

double objective_value(const EntryMetrics& m, Objective o) {
  switch (o) {
    case Objective::TIME: return m.time_to_train_s;
    case Objective::COST: return m.cost_usd;
    case Objective::ENERGY: return m.energy_kwh;
  }
  return m.time_to_train_s;
}

std::vector<std::pair<std::size_t, EntryMetrics>> PlanAnswer::overall() const {
  std::vector<std::pair<std::size_t, EntryMetrics>> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!groups[g].ranked.empty()) out.emplace_back(g, metrics_of(groups[g].ranked.front(), question));
  }
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return objective_value(a.second, question.objective) < objective_value(b.second, question.objective);
  });
  return out;
}

const RankedEntry* recommended(const PlanAnswer& a) {
  const auto overall = a.overall();
  if (!overall.empty()) return &a.groups[overall.front().first].ranked.front();
  if (a.min_nodes && a.min_nodes->found) return &a.min_nodes->group->ranked.front();
  return nullptr;
}

SweepInputs sweep_inputs_for(const PlanQuestion& q, const SweepInputs& base) {
  SweepInputs in = base;
  in.model = &q.model;
  in.profile = &q.profile;
  in.global_batch = q.global_batch;
  in.seq = q.seq;
  in.gap = q.gap;
  in.framework = &q.framework;
  in.layers = q.layers.get();
  in.memory_headroom = q.memory_headroom;
  in.uneven_pipelines = q.uneven_pipelines;
  return in;
}

PlanAnswer answer_plan(PlanQuestion q, const SweepInputs& base, ReplayExecutor& executor, Progress& progress) {
  PlanAnswer a;
  a.question = std::move(q);
  const PlanQuestion& pq = a.question;
  const SweepInputs in = sweep_inputs_for(pq, base);
  std::vector<SweepGroup> groups;
  for (int n : pq.nodes) groups.push_back({fmt::format("{} nodes", n), n, pq.gpus.value_or(0), pq.families, pq.top_k});
  progress.set_label(fmt::format("plan {} on {} {}", printable(pq.model.name), pq.range() ? fmt::format("{}..{}", pq.nodes.front(), pq.nodes.back())
                                                                                 : std::to_string(pq.nodes.front()),
                                 printable(pq.profile.name)));
  a.groups = run_sweep(in, groups, executor, progress);
  const bool any = std::any_of(a.groups.begin(), a.groups.end(), [](const GroupResult& g) { return !g.ranked.empty(); });
  const bool stopped = std::any_of(a.groups.begin(), a.groups.end(), [](const GroupResult& g) { return !g.incomplete.empty(); });
  if (!any && !stopped) {
    // The smallest larger node count that fits, up to the cluster's size.
    MinNodes mn;
    for (int n = pq.nodes.back() + 1; n <= pq.profile.node_count; ++n) {
      mn.searched_up_to = n;
      progress.set_label(fmt::format("plan {}: smallest node count that fits, trying {}", pq.model.name, n));
      std::optional<GroupResult> found;
      if (has_candidate(in, {fmt::format("{} nodes", n), n, 0, pq.families, 1}, executor, progress, &found)) {
        mn.found = true;
        mn.nodes = n;
        mn.group = std::move(found);
        break;
      }
    }
    a.min_nodes = std::move(mn);
  }
  return a;
}

std::string describe(const wl::Strategy& s) {
  std::string out = fmt::format("tp {} x pp {} x dp {}", s.tp, s.pp, s.dp);
  if (s.sp && s.tp > 1) out += " (sp)";
  if (s.pp > 1) out += fmt::format(", {}{}", wl::to_string(s.schedule), s.vpp > 1 ? fmt::format(" x {} chunks", s.vpp) : "");
  if (s.l2l) out += ", L2L";
  else out += fmt::format(", ZeRO-{}", s.zero_stage);
  std::vector<std::string> offload;
  if (s.offload_params != wl::OffloadTarget::NONE) offload.push_back("params " + on_off(s.offload_params));
  if (s.offload_optimizer != wl::OffloadTarget::NONE) offload.push_back("optimizer " + on_off(s.offload_optimizer));
  if (s.offload_activations != wl::ActivationOffload::NONE) offload.push_back("checkpoints cpu");
  if (s.delayed_update) offload.push_back("delayed update");
  if (!offload.empty()) out += " (" + fmt::format("{}", fmt::join(offload, ", ")) + ")";
  out += fmt::format(", recompute {}, micro-batch {} x {}", wl::to_string(s.recompute), s.micro_batch, s.micro_batches());
  return out;
}

nlohmann::ordered_json strategy_json(const wl::Strategy& s) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["gpus"] = s.gpus;
  j["nodes"] = s.nodes;
  j["dp"] = s.dp;
  j["tp"] = s.tp;
  j["pp"] = s.pp;
  j["vpp"] = s.vpp;
  // Settings the search leaves at their defaults, written only when a strategy file set them, so
  // that `simulate --strategy` replays exactly what was ranked.
  if (s.first_stage_layers > 0) j["first_stage_layers"] = s.first_stage_layers;
  if (s.last_stage_layers > 0) j["last_stage_layers"] = s.last_stage_layers;
  if (s.shards > 0) j["shards"] = s.shards;
  j["sp"] = s.sp;
  j["schedule"] = wl::to_string(s.schedule);
  j["zero"] = s.zero_stage;
  j["offload_params"] = wl::to_string(s.offload_params);
  j["offload_optimizer"] = wl::to_string(s.offload_optimizer);
  j["offload_activations"] = wl::to_string(s.offload_activations);
  j["recompute"] = wl::to_string(s.recompute);
  j["l2l"] = s.l2l;
  j["delayed_update"] = s.delayed_update;
  if (s.stack.named()) j["stack"] = stack_json(s.stack);
  j["micro_batch"] = s.micro_batch;
  j["global_batch"] = s.global_batch;
  j["seq"] = s.seq;
  return j;
}

std::string beats_next(const RankedEntry& a, const RankedEntry& b) {
  const Breakdown x = average_breakdown(a.result), y = average_breakdown(b.result);
  const std::pair<double, const char*> saved[] = {{y.compute_s - x.compute_s, "compute"},
                                                  {y.exposed_communication_s - x.exposed_communication_s, "exposed communication"},
                                                  {y.exposed_offload_io_s - x.exposed_offload_io_s, "exposed offload I/O"},
                                                  {y.optimizer_s - x.optimizer_s, "optimizer"},
                                                  {y.idle_s - x.idle_s, "idle (pipeline bubble and waits)"}};
  const auto* top = std::max_element(std::begin(saved), std::end(saved), [](const auto& p, const auto& q) { return p.first < q.first; });
  const bool tie = ranking_step_bin(a.result.step_time_s) == ranking_step_bin(b.result.step_time_s);
  const double gap = b.result.step_time_s - a.result.step_time_s;
  const double less_gpu = b.candidate.model_gpu_bytes - a.candidate.model_gpu_bytes;
  std::string why;
  if (!tie && gap < RANK_RESOLUTION * b.result.step_time_s) {
    // Bins have edges: two step times closer than the resolution may still fall either side.
    why = fmt::format("{:.4g} s ({:.2g}%) faster per step: under the {:g}% ranking resolution, but in the bin below", gap,
                      100 * gap / b.result.step_time_s, 100 * RANK_RESOLUTION);
  } else if (!tie && top->first > 0) {
    why = fmt::format("{:.4g} s ({:.2g}%) faster per step, mostly {:.4g} s less {}", gap, 100 * gap / b.result.step_time_s,
                      top->first, top->second);
  } else if (!tie) {
    why = fmt::format("{:.4g} s faster per step", gap);
  } else if (less_gpu > 0) {
    why = fmt::format("a tie on step time (within {:g}%), with {:.2f} GiB less GPU memory in the memory model", 100 * RANK_RESOLUTION,
                      less_gpu / 1073741824.0);
  } else {
    why = fmt::format("a tie on step time (within {:g}%) and on the memory model's GPU bytes: ordered by the strategy's canonical text",
                      100 * RANK_RESOLUTION);
  }
  const wl::Strategy &s = a.candidate.strategy, &t = b.candidate.strategy;
  std::vector<std::string> diff;
  auto field = [&](const char* name, auto u, auto v) {
    if (u != v) diff.push_back(fmt::format("{} {} instead of {}", name, u, v));
  };
  field("tp", s.tp, t.tp);
  field("pp", s.pp, t.pp);
  field("vpp", s.vpp, t.vpp);
  field("sp", s.sp, t.sp);
  field("schedule", wl::to_string(s.schedule), wl::to_string(t.schedule));
  field("ZeRO stage", s.zero_stage, t.zero_stage);
  field("L2L", s.l2l, t.l2l);
  field("params on", wl::to_string(s.offload_params), wl::to_string(t.offload_params));
  field("optimizer on", wl::to_string(s.offload_optimizer), wl::to_string(t.offload_optimizer));
  field("checkpoints on", s.offload_activations == wl::ActivationOffload::CPU ? "cpu" : "gpu",
        t.offload_activations == wl::ActivationOffload::CPU ? "cpu" : "gpu");
  field("delayed update", s.delayed_update, t.delayed_update);
  field("recompute", wl::to_string(s.recompute), wl::to_string(t.recompute));
  field("micro-batch", s.micro_batch, t.micro_batch);
  if (!diff.empty()) why += "; " + fmt::format("{}", fmt::join(diff, ", "));
  return why;
}

nlohmann::ordered_json infeasible_json(const std::map<std::string, long>& counts) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [reason, n] : counts) j[reason] = n;
  return j;
}

nlohmann::ordered_json entry_json(const RankedEntry& e, const PlanQuestion& q) {
  const EntryMetrics m = metrics_of(e, q);
  const Breakdown b = average_breakdown(e.result);
  nlohmann::ordered_json j;
  j["nodes"] = m.nodes;
  j["gpus"] = m.gpus;
  j["family"] = family_of(e.candidate.strategy);
  j["description"] = describe(e.candidate.strategy);
  j["strategy"] = strategy_json(e.candidate.strategy);
  const std::string caveat = async_caveat(e.candidate.strategy);
  j["changes_optimizer_math"] = caveat.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(caveat);
  j["step_time_s"] = m.step_time_s;
  j["tflops_per_gpu"] = m.tflops_per_gpu;
  j["tokens_per_s"] = m.tokens_per_s;
  j["peak_memory_bytes"] = json_bytes(m.peak_memory_bytes);
  j["peak_reserved_bytes"] = json_bytes(m.peak_reserved_bytes);
  j["host_peak_bytes"] = json_bytes(m.host_peak_bytes);
  j["storage_peak_bytes"] = json_bytes(m.storage_peak_bytes);
  j["time_to_train_days"] = m.time_to_train_days;
  j["gpu_hours"] = m.gpu_hours;
  j["cost_usd"] = m.cost_usd;
  j["energy_kwh"] = m.energy_kwh;
  j["co2_kg"] = m.co2_kg;
  j["breakdown_s"] = {{"compute", b.compute_s},
                      {"exposed_communication", b.exposed_communication_s},
                      {"exposed_offload_io", b.exposed_offload_io_s},
                      {"optimizer", b.optimizer_s},
                      {"idle", b.idle_s}};
  j["step_time_lower_bound_s"] = e.candidate.bound_s;
  // The contention-free walk of its programs (null where not walked).
  j["step_time_walk_bound_s"] = e.candidate.walk_bound_s > 0 ? nlohmann::ordered_json(e.candidate.walk_bound_s) : nlohmann::ordered_json();
  // The capture its layers were costed from (candidate_layers.hpp), or null: the model's own layer.
  const std::string capture = q.layers ? q.layers->capture_of(e.candidate.strategy) : std::string();
  j["layer_capture"] = capture.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(capture);
  j["result"] = result_json(e.result);
  return j;
}

nlohmann::ordered_json plan_header(const PlanQuestion& q, std::string_view command) {
  Request r;
  r.inputs.model = q.model;
  r.profile = q.profile;
  nlohmann::ordered_json j;
  j["schema_version"] = PLAN_SCHEMA_VERSION;
  j["kind"] = "trainsim." + std::string(command);
  j["provenance"] = provenance_json(r, command);
  nlohmann::ordered_json in;
  in["model"] = {{"name", q.model.name}, {"origin", q.model.origin}, {"params", wl::total_params(q.model)},
                 {"precision", wl::to_string(q.model.numerics)}, {"attention", wl::to_string(q.model.attention)}};
  in["cluster"] = {{"name", q.profile.name},           {"origin", q.profile.origin},
                   {"gpu", q.profile.gpu.model},       {"gpus_per_node", q.profile.gpus_per_node()},
                   {"node_count", q.profile.node_count}};
  in["nodes"] = q.nodes;
  in["gpus"] = q.gpus ? nlohmann::ordered_json(*q.gpus) : nlohmann::ordered_json();
  in["global_batch"] = q.global_batch ? nlohmann::ordered_json(*q.global_batch) : nlohmann::ordered_json("one sequence per GPU");
  in["seq"] = q.seq;
  in["tokens"] = q.tokens;
  in["objective"] = to_string(q.objective);
  in["top"] = q.top_k;
  in["gap"] = q.gap;
  std::vector<std::string> families;
  for (const Family* f : q.families) families.emplace_back(f->name);
  in["families"] = families;
  in["price_per_gpu_hour_usd"] = q.profile.cost.price_per_gpu_hour_usd;
  in["power_per_node_kW"] = q.profile.cost.power_per_node_kW;
  in["cost_source"] = q.profile.cost.source;
  in["grid_kgco2_per_kwh"] = q.grid_kg_per_kwh;
  const Framework& f = q.framework;
  in["framework"] = {{"stack", wl::to_string(f.stack.kind)},
                     {"source", f.named() ? nlohmann::ordered_json(f.source) : nlohmann::ordered_json()},
                     {"allow_async", f.allow_async},
                     {"no_effect", f.no_effect}};
  in["memory_headroom"] = q.memory_headroom;
  in["uneven_pipelines"] = q.uneven_pipelines;
  in["notes"] = q.notes;
  j["inputs"] = in;
  // How the candidates' layers were costed, where the model has committed captures.
  if (q.layers) j["layer_basis"] = q.layers->basis();
  return j;
}

}  // namespace trainsim::planner
