#pragma once
// The memory timeline: allocate/free events of the replayed ops, in time order, per simulated GPU
// and per simulated node's host memory and storage. Everything is an event, the model states too
// (the programs allocate them at their start), so the peak is the timeline's maximum, not a
// formula (DESIGN.md).

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
  double peak_bytes = 0;
  double peak_time = 0;
  // GPUs: the peak PyTorch's caching allocator would reserve for these events
  // (reserved_memory.hpp); 0 for hosts and storage.
  double reserved_peak_bytes = 0;
  std::array<double, MEM_CLASSES> at_peak{};  // bytes by class at the peak
  std::vector<MemorySample> samples;          // the whole timeline (for traces)
  // Model states and buckets at the peak (resident the whole step); the rest is transient.
  double resident_at_peak() const;
};

struct MemoryTimeline {
  std::vector<DeviceMemory> gpus;
  std::vector<DeviceMemory> hosts;     // per simulated node
  std::vector<DeviceMemory> storages;  // per simulated node
};

// The order events apply in: by time, and at one instant frees before allocations (a stream-ordered
// allocator reuses memory an op released as the next starts).
inline bool applies_before(double time_a, double bytes_a, double time_b, double bytes_b) {
  if (time_a != time_b) return time_a < time_b;
  return bytes_a < bytes_b;
}

// Frees apply before allocations at the same instant (applies_before).
MemoryTimeline build_memory_timeline(const TaskGraph& graph, const ReplayResult& replay, int gpus, int nodes);

}  // namespace trainsim::sim
