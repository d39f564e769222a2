#pragma once
// A collective as NCCL runs it on the profile's machine: the communicator NCCL would see for a
// placement group (its ranks, nodes, channels and their speed, from the profile and the ring the
// platform builds), and what the replay takes from NCCL's tuning model for one call: the chosen
// algorithm's latency, paid before the bytes move, and its bandwidth, a cap on the ring's rate
// beside the links' own. Shared by the interpreter and the planner's walk (critical_path.cpp),
// so that the walk never sees a collective faster than the replay.
//
// The bytes move over the ring's links whatever NCCL picks: a tree all-reduce loads each node's
// NICs with S up and S down, as a ring's 2(n - 1)/n S nearly does, so its pair's latency and
// bandwidth apply to the same flows.
//
// Only profiles that name their NCCL (`nccl` in hwprofiles/README.md) are costed this way; the
// others keep one profile latency per ring step (ring_latency_s in platform.hpp).

#include <optional>
#include <vector>

#include "cluster_profile.hpp"
#include "nccl_tuning.hpp"
#include "pcie_topology.hpp"
#include "placement.hpp"

namespace trainsim::sim {

// NCCL's view of the group `members` (ranks in ring order): nullopt where the profile names no
// NCCL. Within a node the ring's channels come from NCCL's search over the GPU's fabric link
// (NVLink port, a mesh's link to one peer, or PCIe); across nodes from the ring the platform
// builds: one channel per NIC it crosses (PcieTopology::ring_nics), at the speed NCCL's search
// would give the slower of that NIC and the PCIe link beside it (crossing_ring_rate).
std::optional<NcclComm> nccl_comm(const hw::ClusterProfile& profile, const PcieTopology& topology, const Placement& placement,
                                  const std::vector<int>& members);

struct CollectiveTiming {
  double latency_s = 0;
  // Bytes per second of the ring hop bytes (ring_hop_bytes) NCCL's bandwidth allows: the bytes
  // take nBytes / algbw in NCCL's model, so the hop bytes move at hop_bytes x algbw / nBytes.
  // 0: no cap beyond the links.
  double hop_cap_Bps = 0;
};

// The latency and cap of a collective of `bytes` (nccl-tests' size) over `ranks` ranks on `nodes`
// nodes: NCCL's chosen (algorithm, protocol) where `comm` is given, else the profile's per-step
// latencies and no cap.
CollectiveTiming collective_timing(const hw::ClusterProfile& profile, CollectiveKind kind, double bytes, int ranks, int nodes,
                                   const std::optional<NcclComm>& comm);

}  // namespace trainsim::sim
