#pragma once
// Lowers the data-parallel family's schedule (plain DP, ZeRO-1/2/3, ZeRO-Offload with or without
// the delayed update, ZeRO-Infinity, L2L; with recompute, activation offload and tensor
// parallelism inside the node) into the task graph of the representative node: each instruction
// becomes operations on GPU streams, collectives on rings, copies, storage I/O and CPU work, with
// the allocate/free events that drive the memory timeline.

#include <string>
#include <vector>

#include "cost_model.hpp"
#include "engine.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "node_topology.hpp"
#include "strategy.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

struct LoweredGraph {
  TaskGraph graph;
  RateCaps caps;
  NodeTopology topology;
  int steps = 1;                               // steps simulated (3 with the delayed update)
  std::vector<std::vector<OpId>> step_ends;    // per step: the ops that end it
  std::vector<double> gpu_baseline_bytes;      // resident before the step starts, per local GPU
  double host_baseline_bytes = 0;
  double storage_baseline_bytes = 0;
  std::vector<std::string> notes;
};

LoweredGraph lower_data_parallel(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                 const CostModel& costs, const wl::MemoryEstimate& memory);

}  // namespace trainsim::sim
