#pragma once
// The links of the platform (platform.hpp) and the routes over them, before SimGrid sees the
// routes: each node's links, one GPU-to-GPU hop inside a node or across the network, a ring's
// channel route, a folded copy's weighted listing, and the drop of implied links
// (implied_links.hpp). Internal to platform.cpp.

#include <algorithm>
#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "pcie_topology.hpp"
#include "platform.hpp"

namespace trainsim::sim::detail {
namespace sg = simgrid::s4u;
using Dir = sg::LinkInRoute::Direction;

// One directed use of a link in a route.
struct Hop {
  sg::Link* link;
  Dir dir;
  bool operator<(const Hop& o) const { return link != o.link ? link < o.link : dir < o.dir; }
  bool operator==(const Hop& o) const { return link == o.link && dir == o.dir; }
};
using Route = std::vector<Hop>;

// The links of one node.
struct NodeLinks {
  std::vector<sg::Link*> nvlink;                  // NVSWITCH: one port per GPU
  std::vector<std::vector<sg::Link*>> mesh;       // NVLINK_MESH: mesh[a][b], a < b
  std::vector<sg::Link*> pcie;                    // per GPU
  std::vector<sg::Link*> uplink;                  // per PCIe switch
  std::vector<sg::Link*> nic;
  sg::Link* host_path = nullptr;
  sg::Link* spine = nullptr;                      // the node's even share of an oversubscribed spine
  sg::Link* storage_read = nullptr;
  sg::Link* storage_write = nullptr;
  sg::Link* storage_mixed = nullptr;              // crossed by reads and writes: the engine's cap
  sg::Link* cpu = nullptr;                        // CPU-Adam, in parameters per second
  sg::Host* host = nullptr;                       // the node's host memory (copies' endpoint)
};

// Builds each node's links on first use, and the hops of routes over them.
class Builder {
 public:
  Builder(const hw::ClusterProfile& p, sg::NetZone* zone) : p_(p), zone_(zone), topology_(p) {}

  NodeLinks& node(int n) {
    auto it = nodes_.find(n);
    if (it != nodes_.end()) return it->second;
    return nodes_.emplace(n, build_node(n)).first->second;
  }

  const PcieTopology& topology() const { return topology_; }
  int switch_of_gpu(int g) const { return topology_.switch_of_gpu(g); }
  int switch_of_nic(int c) const { return topology_.switch_of_nic(c); }
  int nic_near(int g) const { return topology_.nic_near(g); }

  // The links of one GPU-to-GPU hop inside node n.
  void intra_hop(int n, int from, int to, Route& r);

  // Out of node `a` through GPU `from`'s PCIe link and NIC `nic`, into node `b` to GPU `to`
  // through the same rail (GPUDirect RDMA). `a == b` is the loop to a mirror and back.
  void network_hop(int a, int from, int b, int to, int nic, Route& r);

  // A route listed with every hop repeated as often as `uses` counts it (folded copies).
  static std::vector<sg::LinkInRoute> weighted(const Route& own, const std::map<Hop, int>& uses);

  // How often each hop appears over these routes.
  static std::map<Hop, int> count(const std::vector<Route>& routes);

  sg::Link* duplex(const std::string& name, double bytes_per_s) {
    return zone_->create_split_duplex_link(name, bytes_per_s)->set_latency(0)->seal();
  }
  sg::Link* simplex(const std::string& name, double bytes_per_s) {
    return zone_->create_link(name, bytes_per_s)->set_latency(0)->seal();
  }

 private:
  NodeLinks build_node(int n);

  const hw::ClusterProfile& p_;
  sg::NetZone* zone_;
  PcieTopology topology_;
  std::map<int, NodeLinks> nodes_;
};

// A simulated GPU's copies (itself first).
std::vector<int> copies_of(const PlatformGpu& g);
// One channel of a ring: node by node, entering at a member beside the channel's NIC and leaving
// from another there, every other member crossed on the way (NCCL's ring pipeline: one flow over
// every link of the ring, so the ring runs at the pace of its slowest link).
Route ring_route(Builder& b, const std::vector<RingLocation>& ring, bool reaches_mirrors, int nic);

inline Hop hop_of(const sg::LinkInRoute& l) { return Hop{const_cast<sg::Link*>(l.get_link()), l.get_direction()}; }

// A route before it is registered with SimGrid.
struct PendingRoute {
  sg::Host* from;
  sg::Host* to;
  std::vector<sg::LinkInRoute> links;
};

// Drops from every route the links that the others imply (implied_links.hpp): the same rates
// from a smaller sharing model. `adjustable`: links whose rate the engine sets while it runs.
void drop_implied_links(std::vector<PendingRoute>& routes, const std::set<const sg::Link*>& adjustable);

}  // namespace trainsim::sim::detail
