#pragma once
// The memory timeline: allocate/free events of the replayed ops, in time order, per device of the
// representative node. Peak memory is this timeline's maximum, not a formula (DESIGN.md).

#include <array>
#include <vector>

#include "engine.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

struct MemorySample {
  double time = 0;
  double bytes = 0;
};

struct DeviceMemory {
  double baseline_bytes = 0;
  double peak_bytes = 0;
  double peak_time = 0;
  std::array<double, MEM_CLASSES> at_peak{};  // bytes by class at the peak, beyond the baseline
  std::vector<MemorySample> samples;          // the whole timeline (for traces)
};

struct MemoryTimeline {
  std::vector<DeviceMemory> gpus;
  DeviceMemory host;
  DeviceMemory storage;
};

// Frees apply before allocations at the same instant (a stream-ordered allocator reuses memory
// an op released as the next starts).
MemoryTimeline build_memory_timeline(const TaskGraph& graph, const ReplayResult& replay, int gpus,
                                     const std::vector<double>& gpu_baseline, double host_baseline,
                                     double storage_baseline);

}  // namespace trainsim::sim
