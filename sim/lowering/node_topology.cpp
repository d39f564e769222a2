#include "node_topology.hpp"

#include <algorithm>

namespace trainsim::sim {

NodeTopology node_topology(const wl::Strategy& s, int gpus_per_node) {
  NodeTopology t;
  t.local_gpus = std::min(s.gpus, gpus_per_node);
  t.tp = s.tp;
  t.dp = s.dp;
  t.dp_local = t.local_gpus / s.tp;
  t.dp_crosses_nodes = s.dp > t.dp_local;
  for (int i = 0; i < s.tp; ++i) {
    RingSpec ring;
    for (int j = 0; j < t.dp_local; ++j) ring.members.push_back(j * s.tp + i);
    ring.crosses_nodes = t.dp_crosses_nodes;
    t.rings.push_back(ring);
  }
  for (int j = 0; j < t.dp_local; ++j) {
    RingSpec ring;
    for (int i = 0; i < s.tp; ++i) ring.members.push_back(j * s.tp + i);
    t.rings.push_back(ring);
  }
  return t;
}

}  // namespace trainsim::sim
