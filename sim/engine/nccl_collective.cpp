#include "nccl_collective.hpp"

#include <algorithm>
#include <set>

#include "engine.hpp"
#include "platform.hpp"

namespace trainsim::sim {

std::optional<NcclComm> nccl_comm(const hw::ClusterProfile& profile, const PcieTopology& topology, const Placement& placement,
                                  const std::vector<int>& members) {
  if (!profile.nccl) return std::nullopt;
  NcclComm c;
  c.ranks = static_cast<int>(members.size());
  std::set<int> nodes;
  std::vector<RingLocation> ring;
  for (int m : members) {
    const GpuLocation at = placement.location(m);
    nodes.insert(at.node);
    ring.push_back({at.node, at.gpu});
  }
  c.nodes = std::max(1, static_cast<int>(nodes.size()));
  c.nvlink_intra = profile.intra_node.fabric != hw::IntraNodeFabric::PCIE_ONLY;
  c.gpu_sm = profile.nccl->gpu_sm;
  c.amd_cpu = profile.nccl->cpu_vendor == hw::NcclCpuVendor::AMD;
  if (c.nodes == 1 || ring.empty()) {
    const int gpus = profile.gpus_per_node();
    double link = profile.pcie.link_GBps;
    if (profile.intra_node.fabric == hw::IntraNodeFabric::NVSWITCH) link = profile.intra_node.link_GBps;
    if (profile.intra_node.fabric == hw::IntraNodeFabric::NVLINK_MESH && gpus > 1) link = profile.intra_node.link_GBps / (gpus - 1);
    nccl_intra_channels(link, c.channels, c.channel_GBps);
    return c;
  }
  // The NICs the ring's channels take, and whether one sits on a PCIe switch beside a member
  // (NCCL's PATH_PXB at worst, which LL128 needs).
  std::vector<RingLocation> first;
  for (const auto& m : ring) {
    if (m.node == ring.front().node) first.push_back(m);
  }
  const std::vector<int> nics = topology.ring_nics(first);
  c.nic_beside_gpu = false;
  for (int n : nics) {
    for (const auto& m : first) c.nic_beside_gpu = c.nic_beside_gpu || topology.switch_of_nic(n) == topology.switch_of_gpu(m.gpu);
  }
  const double rate_GBps =
      crossing_ring_rate(topology, ring, profile.pcie.link_GBps * 1e9, profile.nic.link_Gbps / 8.0 * 1e9) / 1e9;
  c.channels = std::max(1, static_cast<int>(nics.size()));
  c.channel_GBps = nccl_inter_channel_GBps(rate_GBps / c.channels);
  // search.cc: a graph of channels at 25 GB/s or more is duplicated (at most MAXCHANNELS/2).
  if (c.channel_GBps >= 25.0) {
    const int dup = std::min(c.channels * 2, 16);
    c.channel_GBps /= (dup + c.channels - 1) / c.channels;
    c.channels = dup;
  }
  return c;
}

CollectiveTiming collective_timing(const hw::ClusterProfile& profile, CollectiveKind kind, double bytes, int ranks, int nodes,
                                   const std::optional<NcclComm>& comm) {
  CollectiveTiming t;
  if (ranks < 2) return t;
  if (!comm) {
    t.latency_s = ring_latency_s(profile, ring_steps(kind, ranks), ranks, nodes);
    return t;
  }
  const NcclChoice choice = nccl_choose(kind, bytes, *comm);
  t.latency_s = choice.latency_us * 1e-6;
  if (bytes > 0 && choice.algbw_GBps > 0) t.hop_cap_Bps = ring_hop_bytes(kind, bytes, ranks) * choice.algbw_GBps * 1e9 / bytes;
  return t;
}

}  // namespace trainsim::sim
