#pragma once
// Where a node's GPUs and NICs sit on its PCIe switches, and which NICs a ring crossing nodes
// takes as its channels: plain arithmetic on the profile, shared by the platform that builds the
// links (platform.cpp, platform_links.cpp) and the planner's contention-free walk
// (critical_path.cpp), which must never see a ring faster than the platform makes it.

#include <algorithm>
#include <utility>
#include <vector>

#include "cluster_profile.hpp"
#include "placement.hpp"
#include "platform.hpp"

namespace trainsim::sim {

class PcieTopology {
 public:
  explicit PcieTopology(const hw::ClusterProfile& p)
      : gpus_per_switch_(std::max(1, p.pcie.gpus_per_switch)), nics_(p.nic.count) {
    switches_ = (p.gpus_per_node() + gpus_per_switch_ - 1) / gpus_per_switch_;
  }

  int switches() const { return switches_; }
  int switch_of_gpu(int g) const { return g / gpus_per_switch_; }
  // NICs spread evenly over the switches.
  int switch_of_nic(int c) const { return c * switches_ / std::max(1, nics_); }
  int nic_near(int g) const {
    for (int c = 0; c < nics_; ++c) {
      if (switch_of_nic(c) == switch_of_gpu(g)) return c;
    }
    return nics_ > 0 ? g % nics_ : -1;
  }

  // Where a ring's channel through NIC `nic` enters and leaves one node whose members are `gpus`
  // (in ring order): at a member beside the NIC, leaving from the next one there (NCCL's GPU
  // nearest the NIC), or at the first member when none is beside it. The k-th NIC of a switch
  // enters at its k-th member there: NCCL's search charges each channel's bandwidth to every
  // PCIe link it crosses (NVIDIA/nccl v2.12.10-1 src/graph/search.cc, followPath) and so spreads
  // the channels of a switch's NICs over its GPUs, one entering and one leaving by each GPU's
  // link where the GPUs are as many as the NICs. (NCCL's maintainers measure 192 GB/s all-reduce
  // bus bandwidth across DGX A100 nodes of 8 x 200 Gb/s NICs, two NICs a switch: NVIDIA/nccl
  // issue 812, 2023-03-31; two channels through one 24 GB/s PCIe link would cap it at 96.)
  std::pair<int, int> channel_ends(const std::vector<int>& gpus, int nic) const {
    std::vector<int> near;
    for (int g : gpus) {
      if (switch_of_gpu(g) == switch_of_nic(nic)) near.push_back(g);
    }
    if (near.empty()) return {gpus.front(), gpus.front()};
    std::size_t k = 0;  // the NIC's place among its switch's NICs
    for (int c = 0; c < nic; ++c) k += switch_of_nic(c) == switch_of_nic(nic) ? 1 : 0;
    const int entry = near[k % near.size()];
    const int exit = near.size() > 1 ? near[(k + 1) % near.size()] : entry;
    return {entry, exit};
  }

  // The channels of a ring crossing nodes: the NICs on the same PCIe switch as a member of the
  // ring's first node (NCCL keeps rings on the GPU's own switch), or all NICs if none is.
  std::vector<int> ring_nics(const std::vector<RingLocation>& ring) const {
    std::vector<int> nics;
    for (int c = 0; c < nics_; ++c) {
      for (const auto& m : ring) {
        if (m.node == ring.front().node && switch_of_gpu(m.gpu) == switch_of_nic(c)) {
          nics.push_back(c);
          break;
        }
      }
    }
    if (nics.empty()) {
      for (int c = 0; c < nics_; ++c) nics.push_back(c);
    }
    return nics;
  }

 private:
  int gpus_per_switch_ = 1;
  int nics_ = 0;
  int switches_ = 1;
};

// The fastest a ring crossing nodes can move its hop bytes, in bytes/s: the ring's members in
// ring order (`ring`), on links of `pcie_Bps` (a GPU's PCIe link, per direction) and NICs of
// `nic_Bps`; 0 when the ring stays on one node. The bytes split evenly over the channels
// (engine.cpp), so the ring is no faster than its channel count times its slowest channel; a
// channel is no faster than a NIC, nor than the PCIe link it enters or leaves a node by, shared
// with the ring's other channels that enter or leave by the same GPU (channel_ends). Where the
// ring's nodes would give different channels: the most channels any gives, each at the slower of
// a PCIe link and a NIC. An upper bound on what the platform gives the ring alone: the planner's
// bounds (step_bound.cpp, critical_path.cpp) divide by it.
double crossing_ring_rate(const PcieTopology& topology, const std::vector<RingLocation>& ring, double pcie_Bps, double nic_Bps);
// The same for a placement group's members (Placement::group).
double crossing_ring_rate(const PcieTopology& topology, const Placement& placement, const std::vector<int>& members,
                          double pcie_Bps, double nic_Bps);

}  // namespace trainsim::sim
