#pragma once
// Chrome trace JSON (opens in Perfetto, ui.perfetto.dev, and chrome://tracing): a process per
// simulated GPU ("stage 2 (node 1, GPU 0)") with a track per stream (compute, NCCL, host-to-device
// and device-to-host copies) and one for the pipeline sends and one for the receives, linked by
// flow arrows from each send to its receive; a process per simulated node's host (CPU optimizer)
// and storage; one for the fabric (a track per ring); and memory counters per device.

#include <string>

#include "engine.hpp"
#include "interpreter.hpp"
#include "memory_timeline.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

std::string chrome_trace(const TaskGraph& graph, const ReplayResult& replay, const MemoryTimeline& memory,
                         const LoweredPrograms& lowered, const std::string& title);

}  // namespace trainsim::sim
