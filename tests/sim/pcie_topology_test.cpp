// Where a ring's channels cross a node (sim/engine/pcie_topology.hpp), against figures worked out by hand
// from each profile's PCIe switches and NICs: the platform routes channels this way
// (platform_links.cpp, ring_route) and the planner's bounds divide by crossing_ring_rate, so a
// wrong count here makes the bounds unsound or loose.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "pcie_topology.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

std::vector<int> gpus(int first, int end, int step = 1) {
  std::vector<int> out;
  for (int g = first; g < end; g += step) out.push_back(g);
  return out;
}

std::vector<RingLocation> on_node(const std::vector<int>& members) {
  std::vector<RingLocation> ring;
  for (int g : members) ring.push_back({0, g});
  return ring;
}

// A ring over these nodes' members (node -> its GPUs, in ring order).
std::vector<RingLocation> ring_over(const std::map<int, std::vector<int>>& by_node) {
  std::vector<RingLocation> ring;
  for (const auto& [node, members] : by_node) {
    for (int g : members) ring.push_back({node, g});
  }
  return ring;
}

double pcie_of(const hw::ClusterProfile& p) { return p.pcie.link_GBps * 1e9; }
double nic_of(const hw::ClusterProfile& p) { return p.nic.link_Gbps * 1e9 / 8; }

// DGX-2: 16 GPUs, two per PCIe switch, eight switches, a NIC on each. A ring over every GPU of a
// node takes eight channels, channel c entering at GPU 2c and leaving from 2c + 1: each at the
// PCIe link's 12 GB/s (under the NIC's 12.5), 96 GB/s in all.
TEST(PcieTopology, Dgx2RingTakesEightChannelsOnSeparateLinks) {
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  const PcieTopology t(p);
  EXPECT_EQ(t.switches(), 8);
  const std::vector<int> all = gpus(0, 16);
  EXPECT_EQ(t.ring_nics(on_node(all)), gpus(0, 8));
  for (int c = 0; c < 8; ++c) EXPECT_EQ(t.channel_ends(all, c), std::make_pair(2 * c, 2 * c + 1)) << "NIC " << c;
  const std::map<int, std::vector<int>> two_nodes{{0, all}, {1, all}};
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, ring_over(two_nodes), pcie_of(p), nic_of(p)), 8 * 12e9);
}

// DGX-A100: eight GPUs, two per switch, four switches, two NICs on each. A switch's first NIC
// enters at its first GPU and leaves from the second, its second NIC the other way round (NCCL's
// search spreads them, src/graph/search.cc v2.12.10-1): each PCIe link carries one channel each
// way, 24 GB/s a channel (under the NIC's 25), 192 GB/s for the ring, as NCCL's maintainers
// measure across DGX A100 nodes (NVIDIA/nccl issue 812: 192 GB/s all-reduce bus bandwidth); 96
// if both channels entered by one GPU. The even GPUs' ring (tensor parallelism 2) has one member
// per switch: both of a switch's channels enter and leave by that one GPU, 12 GB/s each.
TEST(PcieTopology, DgxA100SpreadsASwitchsChannelsOverItsGpus) {
  const hw::ClusterProfile p = hw::builtin_profile("dgx-a100");
  const PcieTopology t(p);
  EXPECT_EQ(t.switches(), 4);
  const std::vector<int> all = gpus(0, 8);
  EXPECT_EQ(t.channel_ends(all, 0), std::make_pair(0, 1));
  EXPECT_EQ(t.channel_ends(all, 1), std::make_pair(1, 0));
  EXPECT_EQ(t.channel_ends(all, 6), std::make_pair(6, 7));
  EXPECT_EQ(t.channel_ends(all, 7), std::make_pair(7, 6));
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, ring_over({{0, all}, {1, all}}), pcie_of(p), nic_of(p)), 8 * 24e9);
  const std::vector<int> even = gpus(0, 8, 2);
  EXPECT_EQ(t.ring_nics(on_node(even)), gpus(0, 8));
  EXPECT_EQ(t.channel_ends(even, 2), std::make_pair(2, 2));
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, ring_over({{0, even}, {1, even}}), pcie_of(p), nic_of(p)), 8 * 12e9);
}

// Zhores: four GPUs on two switches and one NIC (beside switch 0): one channel, at the PCIe link's
// 12 GB/s; a ring that stays on its node has no such limit (0).
TEST(PcieTopology, ZhoresRingHasOneChannel) {
  const hw::ClusterProfile p = hw::builtin_profile("zhores");
  const PcieTopology t(p);
  const std::vector<int> all = gpus(0, 4);
  EXPECT_EQ(t.ring_nics(on_node(all)), std::vector<int>{0});
  EXPECT_EQ(t.channel_ends(all, 0), std::make_pair(0, 1));
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, ring_over({{0, all}, {3, all}}), pcie_of(p), nic_of(p)), 12e9);
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, on_node(all), pcie_of(p), nic_of(p)), 0.0) << "a ring on one node crosses no NIC";
}

// Nodes holding a ring's members differently give different channels: then the most channels any
// node gives, each at the slower of a PCIe link and a NIC, never fewer.
TEST(PcieTopology, UnlikeNodesTakeTheMostChannelsAnyGives) {
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  const PcieTopology t(p);
  EXPECT_EQ(t.ring_nics(on_node({5})), std::vector<int>{2});
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, ring_over({{0, gpus(0, 16)}, {1, {5}}}), pcie_of(p), nic_of(p)), 8 * 12e9);
  EXPECT_DOUBLE_EQ(crossing_ring_rate(t, ring_over({{0, {5}}, {1, {5}}}), pcie_of(p), nic_of(p)), 12e9);
}

}  // namespace
}  // namespace trainsim::sim
