#pragma once
// A measured training step, as reports/validation/README.md documents the schema (kind
// "trainsim.measured_run", schema_version 1): the model and strategy it ran, the stack with its
// exact policies, its step times and its peak memory per rank (allocated and reserved), and
// optionally per-stream busy times and the profiler trace beside it. Read strictly: an unknown or
// malformed key is a ConfigError naming the file and the key.

#include <optional>
#include <string>
#include <vector>

#include "strategy_input.hpp"
#include "strict_json.hpp"

namespace trainsim::planner {

struct MeasuredRun {
  std::string path;            // the file read
  std::string name;
  std::string model_path;      // the trainsim model JSON, resolved beside the file
  std::string gpu;             // provenance.gpu
  int gpus = 1;
  wl::StrategyInput strategy;  // the strategy object, with the stack and its policies
  std::string stack;           // stack.name as the file says it
  std::vector<int> layers_per_stage;  // pipelines: the stages' layers as the run split them
  double step_time_s = 0;      // median of the timed steps
  double step_time_spread = 0;
  std::vector<double> peak_allocated_bytes;  // per rank
  std::vector<double> peak_reserved_bytes;   // per rank
  std::optional<double> exposed_communication_s;  // measured.busy (optional)
  std::optional<double> bubble_fraction;
  std::optional<std::string> trace_path;     // resolved beside the file, when the run has one
};

// `path`: a measured-run JSON. Throws ConfigError for anything malformed.
MeasuredRun load_measured_run(const std::string& path);
MeasuredRun measured_run_from_json(const JsonDocument& doc, const std::string& directory);

}  // namespace trainsim::planner
