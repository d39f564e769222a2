#pragma once
// `trainsim simulate`: one training step replayed on the cluster model; JSON (public API) and a
// table for people.

#include <nlohmann/json.hpp>
#include <string>

#include "memory_answer.hpp"
#include "simulator.hpp"

namespace trainsim::planner {

inline constexpr int SIMULATE_SCHEMA_VERSION = 1;

struct SimulateAnswer {
  MemoryAnswer memory;
  sim::SimResult result;
  double wall_s = 0;  // simulator wall time (not part of the JSON: same inputs, same bytes)
};

// Throws ConfigError for what the simulator does not cover yet (pipeline parallelism, tensor
// parallelism across nodes, raw parameter counts).
SimulateAnswer answer_simulate(Request request, const sim::SimOptions& options);

nlohmann::ordered_json simulate_json(const SimulateAnswer& a);
// Why an answer has no trace (a.result.trace is empty): a configuration that does not fit is not
// simulated. Empty when the step was simulated.
std::string no_trace_reason(const SimulateAnswer& a);
std::string simulate_table(const SimulateAnswer& a);

}  // namespace trainsim::planner
