#include "pcie_topology.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace trainsim::sim {

double crossing_ring_rate(const PcieTopology& topology, const std::vector<RingLocation>& ring, double pcie_Bps, double nic_Bps) {
  // Each node's members, in ring order: sorted by node, ring order kept within one.
  std::vector<std::pair<int, int>> by_node;  // (node, GPU)
  for (const RingLocation& m : ring) by_node.emplace_back(m.node, m.gpu);
  std::stable_sort(by_node.begin(), by_node.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Nodes holding the ring's members at the same GPUs give the same channels: each shape once (a
  // data-parallel ring over hundreds of nodes has one or two).
  std::set<std::vector<int>> shapes;
  int nodes = 0;
  for (std::size_t i = 0; i < by_node.size();) {
    std::vector<int> gpus;
    std::size_t j = i;
    for (; j < by_node.size() && by_node[j].first == by_node[i].first; ++j) gpus.push_back(by_node[j].second);
    shapes.insert(std::move(gpus));
    ++nodes;
    i = j;
  }
  if (nodes < 2) return 0;
  auto nics_of = [&](const std::vector<int>& gpus) {
    std::vector<RingLocation> ring;
    for (int g : gpus) ring.push_back({0, g});
    return topology.ring_nics(ring);
  };
  const std::vector<int> nics = nics_of(*shapes.begin());
  std::size_t most = nics.size();
  bool alike = true;
  for (const auto& gpus : shapes) {
    const std::vector<int> own = nics_of(gpus);
    most = std::max(most, own.size());
    alike = alike && own == nics;
  }
  double slowest = std::min(pcie_Bps, nic_Bps);
  if (alike) {
    // Every node gives the same channels: count them by the GPU they enter and leave by.
    for (const auto& gpus : shapes) {
      std::map<int, int> entering, leaving;
      for (int c : nics) {
        const auto [entry, exit] = topology.channel_ends(gpus, c);
        ++entering[entry];
        ++leaving[exit];
      }
      for (int c : nics) {
        const auto [entry, exit] = topology.channel_ends(gpus, c);
        slowest = std::min({slowest, pcie_Bps / entering[entry], pcie_Bps / leaving[exit]});
      }
    }
  }
  return static_cast<double>(most) * slowest;
}

double crossing_ring_rate(const PcieTopology& topology, const Placement& placement, const std::vector<int>& members,
                          double pcie_Bps, double nic_Bps) {
  std::vector<RingLocation> ring;
  ring.reserve(members.size());
  for (int m : members) {
    const GpuLocation at = placement.location(m);
    ring.push_back({at.node, at.gpu});
  }
  return crossing_ring_rate(topology, ring, pcie_Bps, nic_Bps);
}

}  // namespace trainsim::sim
