#pragma once
// Chrome trace JSON (opens in Perfetto, ui.perfetto.dev, and chrome://tracing): a process per GPU
// with a track per stream, one for the host (CPU optimizer), one for storage, one for the fabric
// (a track per ring and per PCIe link), and memory counters per device.

#include <string>

#include "engine.hpp"
#include "memory_timeline.hpp"
#include "platform.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

std::string chrome_trace(const TaskGraph& graph, const ReplayResult& replay, const MemoryTimeline& memory,
                         int gpus, const std::string& title);

}  // namespace trainsim::sim
