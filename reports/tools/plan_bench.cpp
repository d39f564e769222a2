#include "plan_bench.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_runs.hpp"

namespace trainsim::bench {
namespace {

struct PlanMeasurement {
  std::string name;
  std::string args;
  double target_s = 0;
  double wall_s = 0, wall_min_s = 0, wall_max_s = 0;
  double cpu_s = 0;  // user + system of the median run, its replays included
  double max_rss_MiB = 0;
  long enumerated = 0, fit = 0, replayed = 0, pruned = 0;
  std::string best;  // the best configuration (single node count) or the fastest (range)
  // A range only: by the family of each node count's answer (with the delayed update apart),
  // how many node counts it won and how many replays those counts made.
  std::map<std::string, std::pair<int, long>> replays_by_winner;
};

// Where a range's replays go: each node count's replays, under the family of its answer.
std::map<std::string, std::pair<int, long>> replays_by_winner(const nlohmann::json& answer) {
  std::map<std::string, std::pair<int, long>> out;
  if (!answer.contains("per_node_count")) return out;
  for (const auto& g : answer["per_node_count"]) {
    std::string key = "nothing fits";
    if (!g["ranked"].empty()) {
      const auto& best = g["ranked"].front();
      key = best["family"].get<std::string>() + (best["strategy"].value("delayed_update", false) ? ", delayed update" : "");
    }
    auto& [counts, replays] = out[key];
    ++counts;
    replays += g["search"]["replayed"].get<long>();
  }
  return out;
}

PlanMeasurement measure_plan(const std::string& trainsim, const std::string& name, const std::string& args, double target_s,
                             int repeat, const std::function<void()>& before_each = [] {}) {
  PlanMeasurement m;
  m.name = name;
  m.args = args;
  m.target_s = target_s;
  const Repeated r = run_repeated(trainsim, "plan " + args + " --format json --quiet", repeat, before_each);
  m.wall_s = r.wall_s;
  m.cpu_s = r.cpu_s;
  m.wall_min_s = r.wall_min_s;
  m.wall_max_s = r.wall_max_s;
  m.max_rss_MiB = r.max_rss_MiB;
  const Run& last = r.last;
  const auto& search = last.answer["search"];
  m.enumerated = search["enumerated"].get<long>();
  m.fit = search["fit_memory_model"].get<long>();
  m.replayed = search["replayed"].get<long>();
  m.pruned = search["pruned_by_bound"].get<long>();
  m.replays_by_winner = replays_by_winner(last.answer);
  const auto& best = last.answer["fastest"];
  if (!best.is_null()) m.best = fmt::format("{} nodes: {}", best["nodes"].get<int>(), best["description"].get<std::string>());
  std::cerr << fmt::format("  {:<52} {:>8.2f} s (target {:.0f} s)  {:>7.1f} MiB  {} replays\n", name, m.wall_s, target_s,
                           m.max_rss_MiB, m.replayed);
  return m;
}

nlohmann::ordered_json to_json(const PlanMeasurement& m) {
  return {{"name", m.name},
          {"command", "trainsim plan " + m.args},
          {"target_s", m.target_s},
          {"meets_target", m.wall_s <= m.target_s},
          {"wall_s_median", m.wall_s},
          {"wall_s_min", m.wall_min_s},
          {"wall_s_max", m.wall_max_s},
          {"cpu_s", m.cpu_s},
          {"max_rss_MiB", m.max_rss_MiB},
          {"strategies_enumerated", m.enumerated},
          {"fit_memory_model", m.fit},
          {"replayed", m.replayed},
          {"pruned_by_bound", m.pruned},
          {"best", m.best}};
}

}  // namespace

// Cold runs replay everything (--no-cache); warm runs answer from a cache the previous run filled.
void plan_section(const std::string& trainsim, const std::string& out_dir, int repeat, const std::string& date,
                  const std::string& command) {
  const std::string cache = out_dir + "/.plan-bench-cache";
  std::filesystem::remove_all(cache);
  std::cerr << "Planner:\n";
  const std::string one = "--model megatron-1t --hw dgx2 --nodes 1";
  const std::string mid = "--model megatron-1t --hw dgx2 --nodes 64";
  const std::string gpt3 = "--model gpt3-175b --hw dgx-a100 --gpus 1024 --global-batch 1536 --tokens 300e9";
  // The ranges the targets name (dgx2 lists 96 nodes: the range is searched up to it).
  const std::string range = "--model megatron-1t --hw dgx2 --nodes 1..128";
  const std::string gpt3_range = "--model gpt3-175b --hw dgx-a100 --nodes 16..128 --global-batch 1536";
  std::vector<PlanMeasurement> ms;
  ms.push_back(measure_plan(trainsim, "1T on 1 DGX-2, cold", one + " --no-cache", 10, repeat));
  ms.push_back(measure_plan(trainsim, "1T on 64 DGX-2, cold", mid + " --no-cache", 10, repeat));
  ms.push_back(measure_plan(trainsim, "GPT-3 175B on 1024 A100, cold", gpt3 + " --no-cache", 10, repeat));
  // Cold: each run starts from an empty cache; the last one leaves it filled for the warm runs.
  ms.push_back(measure_plan(trainsim, "1T on 1..128 DGX-2, cold", range + " --cache " + cache, 60, repeat,
                            [&] { std::filesystem::remove_all(cache); }));
  ms.push_back(measure_plan(trainsim, "1T on 1..128 DGX-2, warm (from its cache)", range + " --cache " + cache, 60, repeat));
  ms.push_back(measure_plan(trainsim, "GPT-3 175B on 16..128 DGX-A100, cold", gpt3_range + " --no-cache", 60, repeat));
  // The same range with an optimality gap of 1% (not the exact ranking the target names).
  const std::string gap_cache = out_dir + "/.plan-bench-cache-gap";
  ms.push_back(measure_plan(trainsim, "1T on 1..128 DGX-2, cold, --gap 0.01 (within 1%, not exact)", range + " --gap 0.01 --cache " + gap_cache,
                            60, repeat, [&] { std::filesystem::remove_all(gap_cache); }));
  std::filesystem::remove_all(cache);
  std::filesystem::remove_all(gap_cache);

  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["kind"] = "trainsim.plan_bench";
  doc["context"] = {{"date", date}, {"host", host_description()}, {"trainsim", trainsim}, {"command", command},
                    {"load_average_1_5_15_min", load_average()}};
  doc["plans"] = nlohmann::ordered_json::array();
  for (const auto& m : ms) doc["plans"].push_back(to_json(m));
  std::ofstream(out_dir + "/plan_bench.json") << doc.dump(2) << "\n";

  std::string md = "# Planner performance\n\n";
  md += fmt::format("Measured {} on {}; `{}` (built RelWithDebInfo). Load average (1, 5, 15 min) at the end: {}; above the "
                    "core count, other processes shared the CPU and the walls are upper bounds.\n\n",
                    date, host_description(), command, load_average());
  md += "Each figure is the real CLI (`trainsim plan ... --format json`) in a child process, wall time from start to exit "
        "(median of the runs where repeated), the user and system CPU of that run with its replays, and peak RSS of the "
        "process tree. Cold: every replay simulated (each cold range run starts from an emptied results cache, the last "
        "leaves it filled; the others use `--no-cache`); warm: the same range again, answered from that cache. On a shared "
        "machine the CPU column, which contention inflates less than the wall, is the steadier figure. Targets (issues 9 "
        "and 38): a single node count under 10 s; 1T on 1..128 DGX-2 and GPT-3 175B on 16..128 DGX-A100 under 60 s, on 2 "
        "cores. Where the table says **no**, the target is not met. Every search is exact (the pruned configurations "
        "provably rank after the K-th best: [soundness.md](soundness.md)) except the `--gap 0.01` row.\n\n"
        "How a plan spends its time: enumerating and checking the space (a few microseconds a strategy: the warm run, every "
        "replay and walk from the cache, is the enumeration alone); walking each candidate whose closed-form bound lies "
        "below the K-th best replay through its real program without contention (sim/critical_path.hpp, 1 to 5 ms for a "
        "data-parallel program, up to 0.15 s for a long pipeline walked at three micro-batch counts); and replaying what "
        "the walk cannot rule out (0.05 s to 3 s each, on every core). Asynchronous schemes (--allow-async) have no bound "
        "and are all replayed; these plans do not search them. A node range pays all of this once per node count.\n\n";
  md += "| plan | wall (s), median [min, max] | target (s) | met | CPU (s) | peak RSS (MiB) | strategies | fit memory | replayed | pruned by bound |\n";
  md += "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& m : ms) {
    md += fmt::format("| {} | {:.2f} [{:.2f}, {:.2f}] | {:.0f} | {} | {:.1f} | {:.0f} | {} | {} | {} | {} |\n", m.name, m.wall_s, m.wall_min_s,
                      m.wall_max_s, m.target_s, m.wall_s <= m.target_s ? "yes" : "**no**", m.cpu_s, m.max_rss_MiB, m.enumerated, m.fit,
                      m.replayed, m.pruned);
  }
  for (const auto& m : ms) {
    if (m.replays_by_winner.empty() || m.name.find("cold") == std::string::npos) continue;
    md += fmt::format("\nWhere the replays of `{}` go, by the family of each node count's answer:\n\n", m.name);
    md += "| answer's family | node counts | replays | replays per node count |\n| --- | --- | --- | --- |\n";
    for (const auto& [family, cr] : m.replays_by_winner) {
      md += fmt::format("| {} | {} | {} | {:.1f} |\n", family, cr.first, cr.second, cr.first > 0 ? double(cr.second) / cr.first : 0.0);
    }
  }
  md += "\nCommands and answers:\n\n";
  for (const auto& m : ms) md += fmt::format("- `trainsim plan {}`: {}\n", m.args, m.best.empty() ? "nothing fits" : m.best);
  std::ofstream(out_dir + "/plan.md") << md;
  std::cerr << "wrote " << out_dir << "/plan_bench.json, plan.md\n";
}

}  // namespace trainsim::bench
