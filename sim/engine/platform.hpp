#pragma once
// A cluster profile as a SimGrid 3.32 platform: the simulated nodes, each built in full (every
// GPU's NVLink/NVSwitch port or mesh links, its PCIe link, the PCIe switches and their uplinks,
// the host memory path, the NICs and the node's share of the spine, the striped storage, the
// CPU), with a host for each simulated GPU only.
//
// Folding (placement.hpp): a simulated GPU may stand for identical GPUs of its node (its copies).
// Its flows then cross each shared link once per copy whose own flow would cross it: SimGrid's
// sharing model counts a link listed k times in a route as k units of that flow, which is exactly
// the load of k identical concurrent flows. A ring stands for identical rings of its node the
// same way. A group with members on nodes that are not simulated (mirrors: other data-parallel
// replicas) leaves through the simulated node's NICs and re-enters through them: the traffic a
// mirror would send is the traffic this node receives (exact on a symmetric fabric: full
// bisection, or an oversubscribed spine shared evenly, `oversubscription`).
//
// Network arithmetic is exact: CM02 with cross-traffic off and TCP-gamma disabled (sim/README.md);
// latencies are added explicitly, never hidden in factors.

#include <algorithm>
#include <string>
#include <vector>

#include "cluster_profile.hpp"

namespace simgrid::s4u {
class Host;
class Link;
}  // namespace simgrid::s4u

namespace trainsim::sim {

// A GPU the replay simulates: its node, its index there, and its copies' GPUs (itself first).
struct PlatformGpu {
  int node = 0;
  int gpu = 0;
  std::vector<int> copy_gpus;  // empty means {gpu}
};

struct RingLocation {
  int node = 0;
  int gpu = 0;
  bool operator==(const RingLocation&) const = default;
};

// A collective's ring. rings[0] holds the simulated GPUs that take part (in ring order, possibly
// on several simulated nodes); rings[1..] are identical rings of their copies on the same node,
// whose shared links the simulated ring counts.
struct RingSpec {
  std::vector<std::vector<RingLocation>> rings;
  bool reaches_mirrors = false;  // the group has members on nodes that are not simulated
  bool operator==(const RingSpec&) const = default;
};

// A point-to-point transfer between two simulated GPUs (pipeline sends); it stands for the copies'
// transfers (copy j of the source to copy j of the destination).
struct TransferSpec {
  int src = 0;  // simulated GPU index
  int dst = 0;
  bool operator==(const TransferSpec&) const = default;
};

struct PlatformSpec {
  std::vector<PlatformGpu> gpus;
  std::vector<RingSpec> rings;
  std::vector<TransferSpec> transfers;
};

struct RingRoute {
  std::vector<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> channels;  // one endpoint pair per channel
  // A private link at the head of each channel's route: unlimited, or set to a calibrated rate
  // for the collective in flight. SimGrid 3.32 refuses Comm::set_rate on host-to-host comms.
  std::vector<simgrid::s4u::Link*> caps;
  // Per channel: bytes per second where the channel shares no link with any other route (its
  // rate whenever it runs, known before the replay), else 0.
  std::vector<double> exclusive_rates;
  // Every channel alone on its links: the ring's collectives are timed in closed form.
  bool alone() const {
    return !exclusive_rates.empty() && std::all_of(exclusive_rates.begin(), exclusive_rates.end(), [](double r) { return r > 0; });
  }
};

struct TransferRoute {
  simgrid::s4u::Host* src = nullptr;
  simgrid::s4u::Host* dst = nullptr;
  double latency_s = 0;
};

// Host speed of GPU hosts: an exec of `seconds` runs `seconds * GPU_SPEED` flops.
inline constexpr double GPU_SPEED = 1e9;
// The bandwidth of a rate-cap link with no cap in force (bytes/s): never the bottleneck.
inline constexpr double UNCAPPED = 1e18;

class Platform {
 public:
  // Builds the platform in the process's SimGrid engine (which must exist and be configured).
  // `drop_implied`: leave out of every route the links that other links imply (implied_links.hpp;
  // the same rates, fewer links to share); off only to check that claim.
  Platform(const hw::ClusterProfile& profile, const PlatformSpec& spec, bool drop_implied = true);

  simgrid::s4u::Host* gpu(int g) const { return gpu_hosts_[static_cast<std::size_t>(g)]; }
  // The host memory of GPU g's node (copies start and end here).
  simgrid::s4u::Host* host_of(int g) const { return node_cpu_[static_cast<std::size_t>(g)]; }
  // GPU g's end of its node's storage links, its CPU work (CPU-Adam as a flow over the node's
  // CPU link, in parameters per second) and the other end of that work.
  simgrid::s4u::Host* io_endpoint(int g) const { return io_[static_cast<std::size_t>(g)]; }
  simgrid::s4u::Host* cpu_work_end(int g) const { return cpu_end_[static_cast<std::size_t>(g)]; }
  bool has_storage() const { return has_storage_; }
  // GPU g's node's link that both storage directions cross (nullptr when the profile has no mixed
  // read+write figure), and the rate the engine caps it to while reads and writes overlap.
  simgrid::s4u::Link* storage_mixed(int g) const { return storage_mixed_[static_cast<std::size_t>(g)]; }
  double storage_mixed_bytes_per_s() const { return storage_mixed_rate_; }
  const RingRoute& ring(int id) const { return rings_[static_cast<std::size_t>(id)]; }
  const TransferRoute& transfer(int id) const { return transfers_[static_cast<std::size_t>(id)]; }
  // The PCIe latency a host<->GPU copy waits before its bytes move. The engine delays the copy
  // by it instead of routing it over a link with latency: SimGrid's CM02 model weights a flow's
  // share of a link by its route's latency (a latency-free flow gets weight 1), so a copy that
  // alone carried 5 us took nearly all of a GPU's PCIe link from the collectives and pipeline sends
  // that cross it on their way to the NICs (engine.cpp, start).
  double copy_latency_s() const { return copy_latency_s_; }
  // The private rate-cap link of a GPU's host-to-device or device-to-host copies.
  simgrid::s4u::Link* copy_cap(int gpu, bool to_gpu) const {
    return (to_gpu ? h2d_caps_ : d2h_caps_)[static_cast<std::size_t>(gpu)];
  }
  int simulated_nodes() const { return nodes_; }

 private:
  std::vector<simgrid::s4u::Host*> gpu_hosts_, node_cpu_, io_, cpu_end_;
  bool has_storage_ = false;
  int nodes_ = 0;
  std::vector<RingRoute> rings_;
  std::vector<TransferRoute> transfers_;
  std::vector<simgrid::s4u::Link*> h2d_caps_, d2h_caps_;
  std::vector<simgrid::s4u::Link*> storage_mixed_;
  double storage_mixed_rate_ = 0;
  double copy_latency_s_ = 0;
};

// CPU-Adam throughput of a node: the profile's calibration, else scaled from the ZeRO-Offload
// figure in the seeds (1 billion parameters in 0.22 s on a DGX-2's 48 cores).
double cpu_adam_params_per_s(const hw::ClusterProfile& profile, bool* assumed = nullptr);

// The latency of a ring collective on a profile that names no NCCL (nccl_collective.hpp costs
// those that do with NCCL's own tables): NCCL's ring shape (src/graph/tuning.cc) with the
// profile's latencies, one intra-node hop latency per step inside nodes and one network latency
// per step that crosses nodes.
// `ranks` in the group, spread over `nodes` nodes.
double ring_latency_s(const hw::ClusterProfile& profile, int steps, int ranks, int nodes);

}  // namespace trainsim::sim
