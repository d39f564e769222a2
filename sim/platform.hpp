#pragma once
// A cluster profile as a SimGrid 3.32 platform. One representative node is built in full: its
// GPUs, their NVLink/NVSwitch ports (or PCIe peer paths), PCIe links and switches, the host's
// memory path, a storage device and the NICs. Other nodes are folded by symmetry: every node of
// a data-parallel job does the same work at the same time, so the traffic a ring sends into the
// fabric from this node is mirrored by the traffic it receives, and the ring's route loops from
// this node's NIC back into this node. This is exact when ranks are identical across nodes and
// the fabric is symmetric (full bisection, or a spine shared evenly: `oversubscription`); it is
// not exact for pipeline stages that differ per node.
//
// Network arithmetic is exact: CM02 with cross-traffic off and TCP-gamma disabled (see
// shared/notes/simgrid-3.32.md); latencies are added explicitly, never hidden in factors.

#include <memory>
#include <string>
#include <vector>

#include "cluster_profile.hpp"

namespace simgrid::s4u {
class Host;
class Link;
}  // namespace simgrid::s4u

namespace trainsim::sim {

// A collective's ring: the local GPUs in ring order, and whether the group spans other nodes.
struct RingSpec {
  std::vector<int> members;
  bool crosses_nodes = false;
  bool operator==(const RingSpec&) const = default;
};

struct RingRoute {
  std::vector<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> channels;  // one endpoint pair per channel
  // A private link at the head of each channel's route: unlimited, or set to a calibrated rate
  // for the collective in flight (ops of one ring run one after another on its members' NCCL
  // stream). SimGrid 3.32 refuses Comm::set_rate on host-to-host comms.
  std::vector<simgrid::s4u::Link*> caps;
  double step_latency_s = 0;  // per ring step (NCCL's per-hop latency)
};

struct PlatformShape {
  int local_gpus = 1;  // GPUs of the representative node in use
  bool multi_node = false;
};

// Host speed of GPU hosts: an exec of `seconds` runs `seconds * GPU_SPEED` flops.
inline constexpr double GPU_SPEED = 1e9;
// The bandwidth of a rate-cap link with no cap in force (bytes/s): never the bottleneck.
inline constexpr double UNCAPPED = 1e18;

class Platform {
 public:
  // Builds the platform in the process's SimGrid engine (which must exist and be configured).
  Platform(const hw::ClusterProfile& profile, const PlatformShape& shape, const std::vector<RingSpec>& rings);

  simgrid::s4u::Host* gpu(int g) const { return gpus_[static_cast<std::size_t>(g)]; }
  simgrid::s4u::Host* cpu() const { return cpu_; }
  simgrid::s4u::Host* delay_host() const { return delay_; }
  // Storage is a host whose read and write links carry the node's striped drive bandwidth.
  // (SimGrid 3.32's Disk resource is equivalent, but mixing disk I/O with executions makes every
  // completion scan a growing list: 40k such activities took 2.4 s instead of 0.04 s.)
  simgrid::s4u::Host* storage() const { return storage_; }
  const RingRoute& ring(int id) const { return rings_[static_cast<std::size_t>(id)]; }
  // The private rate-cap link of a GPU's host-to-device or device-to-host copies.
  simgrid::s4u::Link* copy_cap(int gpu, bool to_gpu) const {
    return (to_gpu ? h2d_caps_ : d2h_caps_)[static_cast<std::size_t>(gpu)];
  }

 private:
  std::vector<simgrid::s4u::Host*> gpus_;
  simgrid::s4u::Host* cpu_ = nullptr;
  simgrid::s4u::Host* delay_ = nullptr;
  simgrid::s4u::Host* storage_ = nullptr;
  std::vector<RingRoute> rings_;
  std::vector<simgrid::s4u::Link*> h2d_caps_, d2h_caps_;
};

// CPU-Adam throughput of a node: the profile's calibration, else scaled from the ZeRO-Offload
// figure in the seeds (1 billion parameters in 0.22 s on a DGX-2's 48 cores).
double cpu_adam_params_per_s(const hw::ClusterProfile& profile, bool* assumed = nullptr);

}  // namespace trainsim::sim
