#include "pcie_topology.hpp"

namespace trainsim::sim {

double crossing_ring_rate(const PcieTopology& topology, const std::map<int, std::vector<int>>& gpus_by_node, double pcie_Bps,
                          double nic_Bps) {
  auto nics_of = [&](int node, const std::vector<int>& gpus) {
    std::vector<RingLocation> ring;
    for (int g : gpus) ring.push_back({node, g});
    return topology.ring_nics(ring);
  };
  if (gpus_by_node.empty()) return 0;
  const std::vector<int> nics = nics_of(gpus_by_node.begin()->first, gpus_by_node.begin()->second);
  std::size_t most = nics.size();
  bool alike = true;
  for (const auto& [node, gpus] : gpus_by_node) {
    const std::vector<int> own = nics_of(node, gpus);
    most = std::max(most, own.size());
    alike = alike && own == nics;
  }
  double slowest = std::min(pcie_Bps, nic_Bps);
  if (alike) {
    // Every node gives the same channels: count them by the GPU they enter and leave by.
    for (const auto& [node, gpus] : gpus_by_node) {
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
