#pragma once
// `trainsim plan`: the sweep's answer for people and programs. For each node count, the ranked
// configurations with what training T tokens would take (days, GPU-hours, cost, energy, CO2 from
// the profile's `cost` section and the grid intensity), why the others were dropped (reason ->
// count), and what makes each ranked entry beat the next one. When no node count of the question
// fits anything: the smallest node count that would, with its best configuration.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan_question.hpp"
#include "sweep.hpp"

namespace trainsim::planner {

inline constexpr int PLAN_SCHEMA_VERSION = 1;

struct EntryMetrics {
  int nodes = 0, gpus = 0;
  double step_time_s = 0, tflops_per_gpu = 0, tokens_per_s = 0;
  double peak_memory_bytes = 0, peak_reserved_bytes = 0, host_peak_bytes = 0, storage_peak_bytes = 0;
  double time_to_train_s = 0, time_to_train_days = 0, gpu_hours = 0, cost_usd = 0, energy_kwh = 0, co2_kg = 0;
};
EntryMetrics metrics_of(const RankedEntry& e, const PlanQuestion& q);
// The objective's figure of merit (lower is better): days, USD or kWh.
double objective_value(const EntryMetrics& m, Objective o);

struct MinNodes {
  bool found = false;
  int nodes = 0;            // the smallest node count that fits (when found)
  int searched_up_to = 0;   // the last node count tried
  std::optional<GroupResult> group;  // its sweep, top 1
};

struct PlanAnswer {
  PlanQuestion question;
  std::vector<GroupResult> groups;  // one per node count asked, ascending
  std::optional<MinNodes> min_nodes;  // set when no group has a ranked entry
  // For a range: the best entry of each node count, ordered by the objective (ties: fewer nodes).
  std::vector<std::pair<std::size_t, EntryMetrics>> overall() const;
};

// Runs the sweep (and, when nothing fits, the search for the smallest node count that does).
PlanAnswer answer_plan(PlanQuestion q, const SweepInputs& base, ReplayExecutor& executor, Progress& progress);

// `base` (the replay options) with the question's model, cluster, batch and sequence: what both
// plan and compare sweep over. The question must outlive the result (it points into it).
SweepInputs sweep_inputs_for(const PlanQuestion& q, const SweepInputs& base);

// "tp 4 x dp 4, ZeRO-3 (params nvme, optimizer nvme), recompute full, micro-batch 4 x 1".
std::string describe(const wl::Strategy& s);
// The strategy as a strategy file (`--strategy`, `compare --strategies`) reads it.
nlohmann::ordered_json strategy_json(const wl::Strategy& s);
// Why `a` ranks before `b`: the category of the step breakdown that saves the most time, and the
// settings that differ ("1.34 s (0.1%) less exposed offload I/O per step; tp 4 instead of 2").
std::string beats_next(const RankedEntry& a, const RankedEntry& b);

// The configuration the answer recommends: the best by the objective over the node counts asked,
// else the smallest node count that fits; none when nothing fits.
const RankedEntry* recommended(const PlanAnswer& a);

nlohmann::ordered_json plan_json(const PlanAnswer& a);
std::string plan_csv(const PlanAnswer& a);
std::string plan_table(const PlanAnswer& a);  // plan_table.cpp

// Shared with compare: an entry's JSON (strategy, family, metrics, breakdown, result).
nlohmann::ordered_json entry_json(const RankedEntry& e, const PlanQuestion& q);
nlohmann::ordered_json infeasible_json(const std::map<std::string, long>& counts);
nlohmann::ordered_json plan_header(const PlanQuestion& q, std::string_view command);

}  // namespace trainsim::planner
