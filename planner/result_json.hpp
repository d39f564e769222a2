#pragma once
// The one serializer of a simulated step (sim::SimResult) in its public form: what `trainsim
// simulate --format json` prints after its header, what each `plan` and `compare` entry carries
// under "result", and what the planner's results cache stores. It is lossless (every field of
// SimResult, numbers as the shortest text that reads back to the same double), so an answer read
// back from the cache prints byte for byte what the fresh replay printed.
//
// Byte counts are whole numbers where they are whole and below 2^53 (byte_counts.hpp), exact
// doubles otherwise. A step that was not simulated has null numbers.

#include <nlohmann/json.hpp>

#include "simulator.hpp"

namespace trainsim::planner {

inline constexpr int RESULT_SCHEMA_VERSION = 1;

nlohmann::ordered_json result_json(const sim::SimResult& r);
// Throws nlohmann::json exceptions on a document that is not result_json's output.
sim::SimResult result_from_json(const nlohmann::json& j);

// Per-step time of the average GPU (simulated GPUs weighted by the ranks they stand for), by
// category; the categories add up to the step time.
struct Breakdown {
  double compute_s = 0, exposed_communication_s = 0, exposed_offload_io_s = 0, optimizer_s = 0, idle_s = 0;
};
Breakdown average_breakdown(const sim::SimResult& r);

}  // namespace trainsim::planner
