// `trainsim plan` for people.
#include <fmt/format.h>

#include <algorithm>

#include "config_error.hpp"
#include "model_params.hpp"
#include "accuracy.hpp"
#include "candidate_layers.hpp"
#include "plan_answer.hpp"
#include "request.hpp"
#include "result_json.hpp"

namespace trainsim::planner {
namespace {

constexpr double GiB = 1073741824.0;

std::string metrics_lines(const RankedEntry& e, const PlanQuestion& q, bool explain) {
  const EntryMetrics m = metrics_of(e, q);
  std::string out = fmt::format("     step {:.4g} s   {:.1f} TFLOP/s per GPU   {:.4g} tokens/s   GPU {:.2f} GiB reserved   host {:.1f} GiB/node",
                                m.step_time_s, m.tflops_per_gpu, m.tokens_per_s, m.peak_reserved_bytes / GiB, m.host_peak_bytes / GiB);
  if (m.storage_peak_bytes > 0) out += fmt::format("   NVMe {:.2f} TB/node", m.storage_peak_bytes / 1e12);
  out += fmt::format("\n     {} tokens: {:.4g} days, {:.4g} GPU-hours, USD {:.4g}, {:.4g} kWh, {:.4g} kg CO2\n", human_count(q.tokens),
                     m.time_to_train_days, m.gpu_hours, m.cost_usd, m.energy_kwh, m.co2_kg);
  if (const std::string caveat = async_caveat(e.candidate.strategy); !caveat.empty()) out += "     " + caveat + "\n";
  if (explain) {
    const Breakdown b = average_breakdown(e.result);
    out += fmt::format("     per step: compute {:.4g} s, exposed communication {:.4g} s, exposed offload I/O {:.4g} s, optimizer "
                       "{:.4g} s, idle {:.4g} s; lower bound {:.4g} s ({}){}\n",
                       b.compute_s, b.exposed_communication_s, b.exposed_offload_io_s, b.optimizer_s, b.idle_s, e.candidate.bound_s,
                       e.candidate.bound_dominant,
                       e.candidate.walk_bound_s > 0 ? fmt::format(", bound from its contention-free walk {:.4g} s", e.candidate.walk_bound_s) : "");
  }
  return out;
}

// Where nothing fits, whether uneven pipelines (not searched by default) might.
std::string uneven_hint(const PlanQuestion& q) {
  if (q.uneven_pipelines) return {};
  return fmt::format(" (pipeline degrees that do not divide the {} layers were not searched: --uneven-pipelines)", q.model.layers);
}

std::string dropped(const GroupResult& g, bool explain) {
  long total = 0;
  for (const auto& [reason, n] : g.infeasible) total += n;
  if (total == 0) return {};
  std::string out = fmt::format("Dropped {} configurations (each counted under its first reason):\n", total);
  std::vector<std::pair<long, std::string>> order;
  for (const auto& [reason, n] : g.infeasible) order.emplace_back(-n, reason);
  std::sort(order.begin(), order.end());
  for (const auto& [n, reason] : order) {
    out += fmt::format("  {:<40}{:>8}", reason, -n);
    if (explain) out += "   e.g. " + g.example.at(reason);
    out += "\n";
  }
  return out;
}

std::string search_line(const GroupResult& g) {
  return fmt::format("  searched {} strategies: {} fit the memory model, {} replayed, {} pruned by the step-time bound\n",
                     g.enumerated, g.candidates, g.replayed, g.pruned.size());
}

// The framework searched for and what it leaves out, in a line: "  framework: megatron (--stack
// megatron); asynchronous schemes not searched (--allow-async)".
std::string framework_line(const PlanQuestion& q) {
  const Framework& f = q.framework;
  std::string out = f.named() ? fmt::format("  framework: {} ({})", wl::to_string(f.stack.kind), f.source)
                              : std::string("  framework: none named (every strategy; --stack, --deepspeed, --megatron-args)");
  out += f.allow_async ? "; asynchronous schemes searched (--allow-async): each marked where it ranks\n"
                       : "; asynchronous schemes not searched (--allow-async)\n";
  for (const std::string& k : f.no_effect) out += "  no effect on what trainsim computes: " + k + "\n";
  return out;
}

std::string header(const PlanAnswer& a) {
  const PlanQuestion& q = a.question;
  const std::string nodes = q.gpus ? fmt::format("{} GPUs", *q.gpus)
                            : q.range() ? fmt::format("{}..{} nodes", q.nodes.front(), q.nodes.back())
                                        : fmt::format("{} node{}", q.nodes.front(), q.nodes.front() == 1 ? "" : "s");
  std::string out = fmt::format("trainsim plan: {} ({}) on {} of {} ({} x {} per node)\n", printable(q.model.name),
                                human_count(wl::total_params(q.model)), nodes, printable(q.profile.name), q.profile.gpus_per_node(),
                                q.profile.gpu.model);
  out += q.global_batch ? fmt::format("  global batch {} x seq {}", *q.global_batch, q.seq)
                        : fmt::format("  global batch: one sequence per GPU (no --global-batch) x seq {}", q.seq);
  out += fmt::format("; training on {} tokens{}; objective: {}\n", human_count(q.tokens),
                     q.tokens_default ? " (20 per parameter, Hoffmann et al. 2022; --tokens)" : "", to_string(q.objective));
  if (!q.families.empty()) {
    std::vector<std::string> names;
    for (const Family* f : q.families) names.emplace_back(f->name);
    out += fmt::format("  families: {}\n", fmt::join(names, ", "));
  }
  out += framework_line(q);
  if (!q.beyond_cluster.empty()) out += "  " + q.beyond_cluster + "\n";
  return out;
}

std::string footer(const PlanQuestion& q) {
  return fmt::format("Cost at USD {:.2f} per GPU-hour, energy at {:.1f} kW per node (the node's maximum; {}: {}); CO2 at {:.3g} kg "
                     "per kWh{}\n",
                     q.profile.cost.price_per_gpu_hour_usd, q.profile.cost.power_per_node_kW, printable(q.profile.name), printable(q.profile.cost.source),
                     q.grid_kg_per_kwh,
                     q.grid_default ? " (US average, Patterson et al. 2021; --grid-kgco2-per-kwh)" : " (--grid-kgco2-per-kwh)");
}

std::string min_nodes_text(const PlanAnswer& a) {
  if (!a.min_nodes) return {};
  const MinNodes& mn = *a.min_nodes;
  if (!mn.found) {
    return fmt::format("Nothing fits, and no larger node count of {} fits either (tried up to {} nodes, the cluster's size).\n",
                       printable(a.question.profile.name), std::max(mn.searched_up_to, a.question.nodes.back()));
  }
  const RankedEntry& e = mn.group->ranked.front();
  return fmt::format("Nothing fits. The smallest node count that fits is {}, with:\n  {}\n", mn.nodes, describe(e.candidate.strategy)) +
         metrics_lines(e, a.question, false);
}

// How the candidates' layers were costed, where the model has committed captures (candidate_layers.hpp).
std::string basis_lines(const PlanQuestion& q) {
  std::string out;
  if (q.layers) {
    for (const std::string& line : q.layers->basis()) out += "Basis: " + line + "\n";
  }
  return out;
}

// How far to trust the recommended configuration (planner/accuracy.hpp); empty when nothing fits.
// One whose layers came from a capture adds the card of the runs predicted so.
std::string accuracy_of(const PlanAnswer& a) {
  const RankedEntry* best = recommended(a);
  if (best == nullptr) return {};
  const bool first = !a.question.range() && !a.groups.front().ranked.empty();
  const std::string subject = first ? "#1" : "the recommended configuration";
  const wl::Strategy& s = best->candidate.strategy;
  std::string out = "\n" + accuracy_text(accuracy_card(s, a.question.profile), subject);
  if (a.question.layers && !a.question.layers->capture_of(s).empty()) {
    out += "With the layers from captures (reports/validation/captured_models):\n" +
           accuracy_text(captured_accuracy_card(s, a.question.profile), subject);
  }
  return out;
}

}  // namespace

// Node counts whose search stopped early, said before the answer is read.
std::string incomplete_lines(const PlanAnswer& a) {
  std::vector<int> counts;
  std::string why;
  for (const GroupResult& g : a.groups) {
    if (g.incomplete.empty()) continue;
    counts.push_back(g.group.nodes);
    why = g.incomplete;
  }
  if (counts.empty()) return {};
  std::string list;
  for (int n : counts) list += (list.empty() ? "" : ", ") + std::to_string(n);
  return fmt::format("  INCOMPLETE: stopped by {}: {} {} ranked from what was replayed; a configuration never replayed may beat it\n",
                     why, counts.size() == 1 ? "node count" : "node counts", list);
}

std::string plan_table(const PlanAnswer& a) {
  const PlanQuestion& q = a.question;
  std::string out = header(a) + incomplete_lines(a);
  if (!q.range()) {
    const GroupResult& g = a.groups.front();
    out += search_line(g) + "\n";
    for (std::size_t i = 0; i < g.ranked.size(); ++i) {
      out += fmt::format(" #{:<3}{}  [{}]\n", i + 1, describe(g.ranked[i].candidate.strategy), family_of(g.ranked[i].candidate.strategy));
      out += metrics_lines(g.ranked[i], q, q.explain);
      if (i + 1 < g.ranked.size()) out += "     beats #" + std::to_string(i + 2) + ": " + beats_next(g.ranked[i], g.ranked[i + 1]) + "\n";
    }
    if (g.ranked.empty()) out += "No configuration fits." + uneven_hint(q) + "\n";
    out += "\n" + dropped(g, q.explain) + min_nodes_text(a) + footer(q) + basis_lines(q) + accuracy_of(a);
    return out;
  }
  bool without_answer = false;
  std::vector<std::string> caveats;  // of the asynchronous schemes shown, each once
  out += fmt::format("\n {:>5}  {:<84} {:>10} {:>8} {:>10} {:>11} {:>11} {:>11}\n", "nodes", "best configuration", "step s", "TFLOP/s",
                     "days", "GPU-hours", "cost USD", "energy kWh");
  for (const GroupResult& g : a.groups) {
    if (g.ranked.empty()) {
      std::string why;
      long best = -1;
      for (const auto& [reason, n] : g.infeasible) {
        if (n > best) best = n, why = reason;
      }
      out += fmt::format(" {:>5}  nothing fits ({} of {} strategies: {})\n", g.group.nodes, best, g.enumerated, why);
      without_answer = true;
      continue;
    }
    for (std::size_t i = 0; i < g.ranked.size(); ++i) {
      const EntryMetrics n = metrics_of(g.ranked[i], q);
      const wl::Strategy& s = g.ranked[i].candidate.strategy;
      const std::string caveat = async_caveat(s);
      if (!caveat.empty() && std::find(caveats.begin(), caveats.end(), caveat) == caveats.end()) caveats.push_back(caveat);
      out += fmt::format(" {:>5}  {:<84} {:>10.4g} {:>8.1f} {:>10.4g} {:>11.4g} {:>11.4g} {:>11.4g}\n",
                         i == 0 ? std::to_string(g.group.nodes) : std::string(), describe(s) + (caveat.empty() ? "" : " *"),
                         n.step_time_s, n.tflops_per_gpu, n.time_to_train_days, n.gpu_hours, n.cost_usd, n.energy_kwh);
    }
  }
  // Asynchronous schemes (--allow-async) are marked where they rank, as in the single count's entries.
  for (const std::string& caveat : caveats) out += "  * " + caveat + "\n";
  if (without_answer && !q.uneven_pipelines) out += "Where nothing fits:" + uneven_hint(q) + "\n";
  const auto overall = a.overall();
  if (!overall.empty()) {
    auto best_by = [&](auto key) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < overall.size(); ++i) {
        if (key(overall[i].second) < key(overall[best].second)) best = i;
      }
      return overall[best];
    };
    const auto fastest = best_by([](const EntryMetrics& m) { return m.time_to_train_s; });
    const auto cheapest = best_by([](const EntryMetrics& m) { return m.cost_usd; });
    out += fmt::format("\nFastest: {} nodes, {:.4g} days ({})\n", fastest.second.nodes, fastest.second.time_to_train_days,
                       describe(a.groups[fastest.first].ranked.front().candidate.strategy));
    out += fmt::format("Cheapest: {} nodes, USD {:.4g} ({})\n", cheapest.second.nodes, cheapest.second.cost_usd,
                       describe(a.groups[cheapest.first].ranked.front().candidate.strategy));
    out += fmt::format("Best by {}: {} nodes\n", to_string(q.objective), overall.front().second.nodes);
  }
  long enumerated = 0, replayed = 0, pruned = 0;
  for (const GroupResult& g : a.groups) enumerated += g.enumerated, replayed += g.replayed, pruned += static_cast<long>(g.pruned.size());
  out += fmt::format("\nSearched {} strategies over {} node counts: {} replayed, {} pruned by the step-time bound\n", enumerated,
                     a.groups.size(), replayed, pruned);
  out += min_nodes_text(a) + footer(q) + basis_lines(q) + accuracy_of(a);
  return out;
}

}  // namespace trainsim::planner
