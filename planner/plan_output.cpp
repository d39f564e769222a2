// `trainsim plan` as JSON (public API) and CSV.
#include <fmt/format.h>

#include "accuracy.hpp"
#include "candidate_layers.hpp"
#include "plan_answer.hpp"

namespace trainsim::planner {
namespace {

nlohmann::ordered_json ranked_json(const std::vector<RankedEntry>& ranked, const PlanQuestion& q) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    nlohmann::ordered_json e;
    e["rank"] = i + 1;
    nlohmann::ordered_json entry = entry_json(ranked[i], q);
    for (auto& [k, v] : entry.items()) e[k] = std::move(v);
    e["beats_next"] = i + 1 < ranked.size() ? nlohmann::ordered_json(beats_next(ranked[i], ranked[i + 1])) : nlohmann::ordered_json();
    out.push_back(std::move(e));
  }
  return out;
}

nlohmann::ordered_json group_json(const GroupResult& g, const PlanQuestion& q) {
  nlohmann::ordered_json j;
  j["nodes"] = g.group.nodes;
  j["gpus"] = g.group.gpus > 0 ? g.group.gpus : g.group.nodes * q.profile.gpus_per_node();
  j["global_batch"] = g.global_batch;
  j["ranked"] = ranked_json(g.ranked, q);
  j["infeasible"] = infeasible_json(g.infeasible);
  j["search"] = {{"enumerated", g.enumerated},
                 {"fit_memory_model", g.candidates},
                 {"replayed", g.replayed},
                 {"pruned_by_bound", static_cast<long>(g.pruned.size())}};
  j["incomplete"] = g.incomplete.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(g.incomplete);
  return j;
}

}  // namespace

nlohmann::ordered_json plan_json(const PlanAnswer& a) {
  const PlanQuestion& q = a.question;
  nlohmann::ordered_json j = plan_header(q, "plan");
  std::map<std::string, long> infeasible;
  long enumerated = 0, candidates = 0, replayed = 0, pruned = 0;
  for (const GroupResult& g : a.groups) {
    for (const auto& [reason, n] : g.infeasible) infeasible[reason] += n;
    enumerated += g.enumerated;
    candidates += g.candidates;
    replayed += g.replayed;
    pruned += static_cast<long>(g.pruned.size());
  }
  if (q.range()) {
    // The best of each node count, by the objective.
    nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
    std::size_t rank = 0;
    for (const auto& [g, m] : a.overall()) {
      nlohmann::ordered_json e;
      e["rank"] = ++rank;
      nlohmann::ordered_json entry = entry_json(a.groups[g].ranked.front(), q);
      for (auto& [k, v] : entry.items()) e[k] = std::move(v);
      ranked.push_back(std::move(e));
    }
    j["ranked"] = std::move(ranked);
  } else {
    j["ranked"] = ranked_json(a.groups.front().ranked, q);
  }
  j["infeasible"] = infeasible_json(infeasible);
  j["search"] = {{"enumerated", enumerated}, {"fit_memory_model", candidates}, {"replayed", replayed}, {"pruned_by_bound", pruned}};
  // Node counts whose search stopped before it could rank exactly (an interrupt, --time-limit).
  nlohmann::ordered_json incomplete = nlohmann::ordered_json::array();
  for (const GroupResult& g : a.groups) {
    if (!g.incomplete.empty()) incomplete.push_back({{"nodes", g.group.nodes}, {"reason", g.incomplete}});
  }
  j["incomplete"] = std::move(incomplete);
  j["per_node_count"] = nlohmann::ordered_json::array();
  for (const GroupResult& g : a.groups) j["per_node_count"].push_back(group_json(g, q));
  // Fastest and cheapest over every node count asked.
  const GroupResult* fastest = nullptr;
  const GroupResult* cheapest = nullptr;
  double best_time = 0, best_cost = 0;
  for (const GroupResult& g : a.groups) {
    if (g.ranked.empty()) continue;
    const EntryMetrics m = metrics_of(g.ranked.front(), q);
    if (fastest == nullptr || m.time_to_train_s < best_time) fastest = &g, best_time = m.time_to_train_s;
    if (cheapest == nullptr || m.cost_usd < best_cost) cheapest = &g, best_cost = m.cost_usd;
  }
  j["fastest"] = fastest ? entry_json(fastest->ranked.front(), q) : nlohmann::ordered_json();
  j["cheapest"] = cheapest ? entry_json(cheapest->ranked.front(), q) : nlohmann::ordered_json();
  if (a.min_nodes) {
    const MinNodes& mn = *a.min_nodes;
    nlohmann::ordered_json m;
    m["found"] = mn.found;
    m["nodes"] = mn.found ? nlohmann::ordered_json(mn.nodes) : nlohmann::ordered_json();
    m["searched_up_to"] = mn.searched_up_to;
    m["best"] = mn.found ? entry_json(mn.group->ranked.front(), q) : nlohmann::ordered_json();
    j["min_nodes_to_fit"] = std::move(m);
  } else {
    j["min_nodes_to_fit"] = nullptr;
  }
  const RankedEntry* best = recommended(a);
  j["accuracy"] = best ? accuracy_json(accuracy_card(best->candidate.strategy, q.profile)) : nlohmann::ordered_json();
  if (best && q.layers && !q.layers->capture_of(best->candidate.strategy).empty()) {
    j["accuracy_captured_layers"] = accuracy_json(captured_accuracy_card(best->candidate.strategy, q.profile));
  }
  return j;
}

std::string plan_csv(const PlanAnswer& a) {
  const PlanQuestion& q = a.question;
  std::string out =
      "nodes,gpus,rank,family,tp,pp,dp,vpp,sp,schedule,zero,offload_params,offload_optimizer,offload_activations,recompute,"
      "l2l,delayed_update,micro_batch,global_batch,step_time_s,tflops_per_gpu,tokens_per_s,peak_memory_bytes,host_peak_bytes,"
      "storage_peak_bytes,time_to_train_days,gpu_hours,cost_usd,energy_kwh,co2_kg\n";
  for (const GroupResult& g : a.groups) {
    for (std::size_t i = 0; i < g.ranked.size(); ++i) {
      const wl::Strategy& s = g.ranked[i].candidate.strategy;
      const EntryMetrics m = metrics_of(g.ranked[i], q);
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0f},{:.0f},{:.0f},{},{},{},{},{}\n", m.nodes,
                         m.gpus, i + 1, family_of(s), s.tp, s.pp, s.dp, s.vpp, s.sp, wl::to_string(s.schedule), s.zero_stage,
                         wl::to_string(s.offload_params), wl::to_string(s.offload_optimizer), wl::to_string(s.offload_activations),
                         wl::to_string(s.recompute), s.l2l, s.delayed_update, s.micro_batch, s.global_batch, m.step_time_s,
                         m.tflops_per_gpu, m.tokens_per_s, m.peak_memory_bytes, m.host_peak_bytes, m.storage_peak_bytes,
                         m.time_to_train_days, m.gpu_hours, m.cost_usd, m.energy_kwh, m.co2_kg);
    }
  }
  return out;
}

}  // namespace trainsim::planner
