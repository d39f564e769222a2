#pragma once
// Which GPUs of the representative node form which groups: tensor-parallel groups are adjacent
// GPUs, data-parallel groups take one GPU of each tensor-parallel group (Megatron-LM's rank
// order), and a data-parallel group crosses nodes when dp exceeds the GPUs it has here.

#include <vector>

#include "platform.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

struct NodeTopology {
  int local_gpus = 1;
  int tp = 1;
  int dp = 1;                  // whole-job data-parallel degree
  int dp_local = 1;            // members of a data-parallel group on this node
  bool dp_crosses_nodes = false;
  std::vector<RingSpec> rings; // data-parallel rings [0, tp), then tensor-parallel rings
  int dp_ring(int gpu) const { return gpu % tp; }
  int tp_ring(int gpu) const { return tp + gpu / tp; }
  std::vector<int> dp_members(int ring) const { return rings[static_cast<std::size_t>(ring)].members; }
  std::vector<int> tp_members(int gpu) const { return rings[static_cast<std::size_t>(tp_ring(gpu))].members; }
};

NodeTopology node_topology(const wl::Strategy& s, int gpus_per_node);

}  // namespace trainsim::sim
