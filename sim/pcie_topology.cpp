#include "pcie_topology.hpp"

#include <set>

namespace trainsim::sim {

double crossing_ring_rate(const PcieTopology& topology, const std::map<int, std::vector<int>>& gpus_by_node, double pcie_Bps,
                          double nic_Bps) {
  if (gpus_by_node.empty()) return 0;
  // Nodes holding the ring's members at the same GPUs give the same channels: each shape once (a
  // data-parallel ring over hundreds of nodes has one or two).
  std::set<std::vector<int>> shapes;
  for (const auto& [node, gpus] : gpus_by_node) shapes.insert(gpus);
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

}  // namespace trainsim::sim
