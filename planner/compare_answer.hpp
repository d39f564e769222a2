#pragma once
// `trainsim compare`: the best configuration of each strategy family (or of each strategy file)
// on one model and cluster, side by side: a table, JSON, CSV, and two SVG charts (the step-time
// breakdown, and memory per tier).

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan_question.hpp"
#include "sweep.hpp"

namespace trainsim::planner {

inline constexpr int COMPARE_SCHEMA_VERSION = 1;
// `compare` without --families or --strategies: the strategies of the ZeRO, ZeRO-Offload,
// ZeRO-Infinity, GPipe, PipeDream and Megatron-LM papers.
inline constexpr const char* DEFAULT_COMPARE_FAMILIES =
    "zero3,zero-offload,zero-infinity-cpu,zero-infinity-nvme,gpipe,pipedream,2bw,megatron-3d";

struct CompareRow {
  std::string label;   // the family's name or the strategy file's path
  bool family = true;  // false: a strategy file
  std::optional<RankedEntry> entry;  // the best configuration, when one fits
  std::string why_not;               // otherwise: the reason
  std::map<std::string, long> infeasible;
  long enumerated = 0, candidates = 0, replayed = 0, pruned = 0;
};

struct CompareAnswer {
  PlanQuestion question;
  std::vector<CompareRow> rows;
};

// Families: one sweep, one group per family (top 1). Files: each resolved as `simulate
// --strategy FILE` would resolve it, with --nodes/--gpus/--global-batch/--seq given on the
// command line overriding the file (ConfigError naming the file and key for a bad one); without
// --global-batch a file keeps its own batch or simulate's default.
CompareAnswer answer_compare(PlanQuestion q, const std::vector<std::string>& strategy_files, const SweepInputs& base,
                             ReplayExecutor& executor, Progress& progress);

nlohmann::ordered_json compare_json(const CompareAnswer& a);
std::string compare_csv(const CompareAnswer& a);
std::string compare_table(const CompareAnswer& a);
// The two charts: step time per family by category; GPU, host and NVMe bytes per family.
std::string compare_step_time_svg(const CompareAnswer& a);
std::string compare_memory_svg(const CompareAnswer& a);

}  // namespace trainsim::planner
