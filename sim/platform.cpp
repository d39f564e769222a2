#include "platform.hpp"

#include "implied_links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>

namespace trainsim::sim {
namespace sg = simgrid::s4u;
using Dir = sg::LinkInRoute::Direction;

double cpu_adam_params_per_s(const hw::ClusterProfile& profile, bool* assumed) {
  if (profile.calibration.cpu_adam_params_per_s) {
    if (assumed) *assumed = false;
    return *profile.calibration.cpu_adam_params_per_s;
  }
  if (assumed) *assumed = true;
  // Ren et al. 2021 (ZeRO-Offload), CPU-Adam latency table in the seeds: 1e9 parameters in
  // 0.22 s on a DGX-2 host (48 cores): 9.5e7 parameters per core-second.
  constexpr double PER_CORE = 1e9 / 0.22 / 48.0;
  return PER_CORE * profile.host.cores;
}

double ring_latency_s(const hw::ClusterProfile& profile, int steps, int ranks, int nodes) {
  if (ranks < 2 || steps <= 0) return 0;
  // NCCL counts 2(nodes - 1) of an all-reduce's 2(ranks - 1) steps (nodes - 1 of n - 1 for the
  // others) as network steps: the same share of any ring's steps.
  const double inter = nodes > 1 ? static_cast<double>(steps) * (nodes - 1) / (ranks - 1) : 0.0;
  const double intra = steps - inter;
  return intra * profile.intra_node.latency_us * 1e-6 +
         inter * (profile.nic.latency_us + profile.inter_node.latency_us) * 1e-6;
}

namespace {

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

class Builder {
 public:
  Builder(const hw::ClusterProfile& p, sg::NetZone* zone) : p_(p), zone_(zone) {
    switches_ = (p.gpus_per_node() + p.pcie.gpus_per_switch - 1) / p.pcie.gpus_per_switch;
  }

  NodeLinks& node(int n) {
    auto it = nodes_.find(n);
    if (it != nodes_.end()) return it->second;
    return nodes_.emplace(n, build_node(n)).first->second;
  }

  int switch_of_gpu(int g) const { return g / p_.pcie.gpus_per_switch; }
  int switch_of_nic(int c) const { return c * switches_ / std::max(1, p_.nic.count); }
  int nic_near(int g) const {
    for (int c = 0; c < p_.nic.count; ++c) {
      if (switch_of_nic(c) == switch_of_gpu(g)) return c;
    }
    return p_.nic.count > 0 ? g % p_.nic.count : -1;
  }

  // The links of one GPU-to-GPU hop inside node n.
  void intra_hop(int n, int from, int to, Route& r) {
    NodeLinks& l = node(n);
    switch (p_.intra_node.fabric) {
      case hw::IntraNodeFabric::NVSWITCH:
        r.push_back({l.nvlink[static_cast<std::size_t>(from)], Dir::UP});
        r.push_back({l.nvlink[static_cast<std::size_t>(to)], Dir::DOWN});
        break;
      case hw::IntraNodeFabric::NVLINK_MESH: {
        const int a = std::min(from, to), b = std::max(from, to);
        r.push_back({l.mesh[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)], from < to ? Dir::UP : Dir::DOWN});
        break;
      }
      case hw::IntraNodeFabric::PCIE_ONLY: {
        r.push_back({l.pcie[static_cast<std::size_t>(from)], Dir::UP});
        const int sa = switch_of_gpu(from), sb = switch_of_gpu(to);
        if (sa != sb) {
          r.push_back({l.uplink[static_cast<std::size_t>(sa)], Dir::UP});
          r.push_back({l.uplink[static_cast<std::size_t>(sb)], Dir::DOWN});
        }
        r.push_back({l.pcie[static_cast<std::size_t>(to)], Dir::DOWN});
        break;
      }
    }
  }

  // Out of node `a` through GPU `from`'s PCIe link and NIC `nic`, into node `b` to GPU `to`
  // through the same rail (GPUDirect RDMA). `a == b` is the loop to a mirror and back.
  void network_hop(int a, int from, int b, int to, int nic, Route& r) {
    NodeLinks& la = node(a);
    NodeLinks& lb = node(b);
    if (la.nic.empty() || lb.nic.empty()) {
      throw std::logic_error("platform: a transfer between nodes on a profile without NICs");
    }
    r.push_back({la.pcie[static_cast<std::size_t>(from)], Dir::UP});
    r.push_back({la.nic[static_cast<std::size_t>(nic)], Dir::UP});
    if (la.spine) r.push_back({la.spine, Dir::UP});
    if (lb.spine) r.push_back({lb.spine, Dir::DOWN});
    r.push_back({lb.nic[static_cast<std::size_t>(nic)], Dir::DOWN});
    r.push_back({lb.pcie[static_cast<std::size_t>(to)], Dir::DOWN});
  }

  // A route listed with every hop repeated as often as `uses` counts it (folded copies).
  static std::vector<sg::LinkInRoute> weighted(const Route& own, const std::map<Hop, int>& uses) {
    std::vector<sg::LinkInRoute> out;
    std::map<Hop, int> listed, seen;
    for (const Hop& h : own) ++listed[h];
    for (const Hop& h : own) {
      // The listings of h in `own` share h's total use between them.
      const auto it = uses.find(h);
      const int total = it == uses.end() ? listed[h] : it->second;
      const int n = listed[h];
      const int i = seen[h]++;
      const int times = total / n + (i < total % n ? 1 : 0);
      for (int t = 0; t < times; ++t) out.emplace_back(h.link, h.dir);
    }
    return out;
  }

  static std::map<Hop, int> count(const std::vector<Route>& routes) {
    std::map<Hop, int> uses;
    for (const Route& r : routes) {
      for (const Hop& h : r) ++uses[h];
    }
    return uses;
  }

  sg::Link* duplex(const std::string& name, double bytes_per_s) {
    return zone_->create_split_duplex_link(name, bytes_per_s)->set_latency(0)->seal();
  }
  sg::Link* simplex(const std::string& name, double bytes_per_s) {
    return zone_->create_link(name, bytes_per_s)->set_latency(0)->seal();
  }

 private:
  NodeLinks build_node(int n) {
    NodeLinks l;
    const int gpus = p_.gpus_per_node();
    for (int g = 0; g < gpus; ++g) {
      l.pcie.push_back(duplex(fmt::format("n{}.pcie{}", n, g), p_.pcie.link_GBps * 1e9));
      if (p_.intra_node.fabric == hw::IntraNodeFabric::NVSWITCH && gpus > 1) {
        l.nvlink.push_back(duplex(fmt::format("n{}.nvlink{}", n, g), p_.intra_node.link_GBps * 1e9));
      }
    }
    if (p_.intra_node.fabric == hw::IntraNodeFabric::NVLINK_MESH && gpus > 1) {
      // All-to-all links, the GPU's bandwidth split evenly among its peers.
      const double per_peer = p_.intra_node.link_GBps * 1e9 / (gpus - 1);
      l.mesh.assign(static_cast<std::size_t>(gpus), std::vector<sg::Link*>(static_cast<std::size_t>(gpus), nullptr));
      for (int x = 0; x < gpus; ++x) {
        for (int y = x + 1; y < gpus; ++y) {
          l.mesh[static_cast<std::size_t>(x)][static_cast<std::size_t>(y)] = duplex(fmt::format("n{}.nvlink{}-{}", n, x, y), per_peer);
        }
      }
    }
    for (int s = 0; s < switches_; ++s) l.uplink.push_back(duplex(fmt::format("n{}.pcie_switch{}", n, s), p_.pcie.switch_uplink_GBps * 1e9));
    l.host_path = duplex(fmt::format("n{}.host_memory_path", n), p_.pcie.host_aggregate_GBps * 1e9);
    for (int c = 0; c < p_.nic.count; ++c) l.nic.push_back(duplex(fmt::format("n{}.nic{}", n, c), p_.nic.link_Gbps / 8.0 * 1e9));
    if (p_.nic.count > 0 && p_.inter_node.oversubscription > 1.0) {
      l.spine = duplex(fmt::format("n{}.spine_share", n),
                       p_.nic.count * p_.nic.link_Gbps / 8.0 * 1e9 / p_.inter_node.oversubscription);
    }
    if (p_.storage.kind != hw::StorageKind::NONE && p_.storage.count > 0) {
      // Drives are striped (DeepSpeed's aio across a RAID-0 of the node's NVMe): one device with
      // the aggregate bandwidth, reads and writes each with their own. (SimGrid 3.32's Disk is
      // equivalent, but mixing disk I/O with executions makes every completion scan a growing
      // list: 40k such activities took 2.4 s instead of 0.04 s.)
      l.storage_read = simplex(fmt::format("n{}.storage_read", n), p_.storage.read_GBps * p_.storage.count * 1e9);
      l.storage_write = simplex(fmt::format("n{}.storage_write", n), p_.storage.write_GBps * p_.storage.count * 1e9);
      // Reads and writes in flight together were measured to move mixed_read + mixed_write in all
      // (hwprofiles/README.md): both directions cross this link, which the engine caps to that
      // while both run and leaves uncapped otherwise, so each direction alone keeps its own rate.
      if (p_.storage.mixed_read_GBps > 0) l.storage_mixed = simplex(fmt::format("n{}.storage_mixed", n), UNCAPPED);
    }
    l.cpu = simplex(fmt::format("n{}.cpu_adam", n), cpu_adam_params_per_s(p_));
    l.host = zone_->create_host(fmt::format("n{}.host", n), 1.0)->seal();
    return l;
  }

  const hw::ClusterProfile& p_;
  sg::NetZone* zone_;
  int switches_ = 1;
  std::map<int, NodeLinks> nodes_;
};

std::vector<int> copies_of(const PlatformGpu& g) { return g.copy_gpus.empty() ? std::vector<int>{g.gpu} : g.copy_gpus; }

// The channels of a ring crossing nodes: the NICs on the same PCIe switch as a member of the
// first node (NCCL keeps rings on the GPU's own switch), or all NICs if none is.
std::vector<int> ring_nics(const Builder& b, const hw::ClusterProfile& p, const std::vector<RingLocation>& ring) {
  std::vector<int> nics;
  for (int c = 0; c < p.nic.count; ++c) {
    for (const auto& m : ring) {
      if (m.node == ring.front().node && b.switch_of_gpu(m.gpu) == b.switch_of_nic(c)) {
        nics.push_back(c);
        break;
      }
    }
  }
  if (nics.empty()) {
    for (int c = 0; c < p.nic.count; ++c) nics.push_back(c);
  }
  return nics;
}

// One channel of a ring: node by node, entering at a member beside the channel's NIC and leaving
// from another there, every other member crossed on the way (NCCL's ring pipeline: one flow over
// every link of the ring, so the ring runs at the pace of its slowest link).
Route ring_route(Builder& b, const std::vector<RingLocation>& ring, bool reaches_mirrors, int nic) {
  // Members grouped by node, in order of first appearance.
  std::vector<std::pair<int, std::vector<int>>> segments;
  for (const auto& m : ring) {
    if (segments.empty() || segments.back().first != m.node) segments.push_back({m.node, {}});
    segments.back().second.push_back(m.gpu);
  }
  const bool crosses = segments.size() > 1 || reaches_mirrors;
  Route r;
  if (!crosses) {
    const auto& gpus = segments.front().second;
    const int k = static_cast<int>(gpus.size());
    for (int i = 0; i < k && k > 1; ++i) b.intra_hop(segments.front().first, gpus[static_cast<std::size_t>(i)], gpus[static_cast<std::size_t>((i + 1) % k)], r);
    return r;
  }
  std::vector<std::pair<int, int>> entry_exit;
  for (auto& [node, gpus] : segments) {
    std::vector<int> near;
    for (int g : gpus) {
      if (b.switch_of_gpu(g) == b.switch_of_nic(nic)) near.push_back(g);
    }
    const int entry = near.empty() ? gpus.front() : near.front();
    const int exit = near.size() > 1 ? near[1] : entry;
    std::vector<int> order = gpus;
    std::erase(order, entry);
    std::erase(order, exit);
    order.insert(order.begin(), entry);
    if (exit != entry) order.push_back(exit);
    for (std::size_t i = 0; i + 1 < order.size(); ++i) b.intra_hop(node, order[i], order[i + 1], r);
    gpus = order;
    entry_exit.push_back({entry, exit});
  }
  for (std::size_t s = 0; s + 1 < segments.size(); ++s) {
    b.network_hop(segments[s].first, entry_exit[s].second, segments[s + 1].first, entry_exit[s + 1].first, nic, r);
  }
  // Close the ring: from the last node back to the first, or out to the mirrors and back in.
  b.network_hop(segments.back().first, entry_exit.back().second, segments.front().first, entry_exit.front().first, nic, r);
  return r;
}

Hop hop_of(const sg::LinkInRoute& l) { return Hop{const_cast<sg::Link*>(l.get_link()), l.get_direction()}; }

struct PendingRoute {
  sg::Host* from;
  sg::Host* to;
  std::vector<sg::LinkInRoute> links;
};

// Drops from every route the links that the others imply (implied_links.hpp): the same rates
// from a smaller sharing model.
void drop_implied_links(std::vector<PendingRoute>& routes, const std::set<const sg::Link*>& adjustable) {
  std::map<Hop, int> id;
  std::vector<Hop> hops;
  LinkSharing sharing;
  for (const PendingRoute& route : routes) {
    std::vector<int> ids;
    for (const auto& l : route.links) {
      const Hop h = hop_of(l);
      const auto [it, added] = id.try_emplace(h, static_cast<int>(hops.size()));
      if (added) {
        hops.push_back(h);
        sharing.capacity.push_back(h.link->get_bandwidth());
        sharing.adjustable.push_back(adjustable.count(h.link) > 0);
      }
      ids.push_back(it->second);
    }
    sharing.routes.push_back(std::move(ids));
  }
  const std::vector<bool> dropped = implied_links(sharing);
  for (PendingRoute& route : routes) {
    std::erase_if(route.links, [&](const sg::LinkInRoute& l) { return dropped[static_cast<std::size_t>(id.at(hop_of(l)))]; });
  }
}

}  // namespace

Platform::Platform(const hw::ClusterProfile& profile, const PlatformSpec& spec, bool drop_implied) {
  sg::NetZone* zone = sg::create_full_zone("cluster");
  Builder b(profile, zone);
  copy_latency_s_ = profile.pcie.latency_us * 1e-6;
  storage_mixed_rate_ = (profile.storage.mixed_read_GBps + profile.storage.mixed_write_GBps) * profile.storage.count * 1e9;
  // Every route, registered with SimGrid once the links that others imply are dropped (below).
  std::vector<PendingRoute> routes;
  auto add_route = [&](sg::Host* from, sg::Host* to, const std::vector<sg::LinkInRoute>& links) {
    routes.push_back({from, to, links});
  };
  std::set<const sg::Link*> adjustable;  // rate caps the engine sets while it runs

  for (std::size_t i = 0; i < spec.gpus.size(); ++i) {
    const PlatformGpu& pg = spec.gpus[i];
    NodeLinks& l = b.node(pg.node);
    const std::vector<int> copies = copies_of(pg);
    auto* gpu = zone->create_host(fmt::format("gpu{}", i), GPU_SPEED)->seal();
    gpu_hosts_.push_back(gpu);
    node_cpu_.push_back(l.host);
    // Host <-> GPU copies: the host memory path, the GPU's switch uplink and its own link, each
    // shared link once per copy that crosses it.
    std::vector<Route> h2d, d2h;
    for (int c : copies) {
      const auto s = static_cast<std::size_t>(b.switch_of_gpu(c));
      h2d.push_back({{l.host_path, Dir::DOWN}, {l.uplink[s], Dir::DOWN}, {l.pcie[static_cast<std::size_t>(c)], Dir::DOWN}});
      d2h.push_back({{l.pcie[static_cast<std::size_t>(c)], Dir::UP}, {l.uplink[s], Dir::UP}, {l.host_path, Dir::UP}});
    }
    h2d_caps_.push_back(b.simplex(fmt::format("gpu{}.h2d_cap", i), UNCAPPED));
    d2h_caps_.push_back(b.simplex(fmt::format("gpu{}.d2h_cap", i), UNCAPPED));
    adjustable.insert({h2d_caps_.back(), d2h_caps_.back(), l.storage_mixed});
    std::vector<sg::LinkInRoute> to_gpu{sg::LinkInRoute(h2d_caps_.back())};
    for (const auto& h : Builder::weighted(h2d.front(), Builder::count(h2d))) to_gpu.push_back(h);
    std::vector<sg::LinkInRoute> from_gpu{sg::LinkInRoute(d2h_caps_.back())};
    for (const auto& h : Builder::weighted(d2h.front(), Builder::count(d2h))) from_gpu.push_back(h);
    add_route(l.host, gpu, to_gpu);
    add_route(gpu, l.host, from_gpu);
    // Storage and CPU work: every copy reads, writes and updates its own shard.
    auto* io = zone->create_host(fmt::format("gpu{}.io", i), 1.0)->seal();
    auto* cpu_end = zone->create_host(fmt::format("gpu{}.cpu", i), 1.0)->seal();
    io_.push_back(io);
    storage_mixed_.push_back(l.storage_mixed);
    cpu_end_.push_back(cpu_end);
    const std::size_t k = copies.size();
    if (l.storage_read) {
      has_storage_ = true;
      std::vector<sg::LinkInRoute> read(k, sg::LinkInRoute(l.storage_read)), write(k, sg::LinkInRoute(l.storage_write));
      if (l.storage_mixed) {
        read.insert(read.end(), k, sg::LinkInRoute(l.storage_mixed));
        write.insert(write.end(), k, sg::LinkInRoute(l.storage_mixed));
      }
      add_route(io, l.host, read);
      add_route(l.host, io, write);
    }
    add_route(io, cpu_end, std::vector<sg::LinkInRoute>(k, sg::LinkInRoute(l.cpu)));
  }

  std::vector<std::vector<std::size_t>> channel_links;
  for (std::size_t r = 0; r < spec.rings.size(); ++r) {
    const RingSpec& ring = spec.rings[r];
    RingRoute route;
    std::vector<std::size_t> ring_links;  // its channels' routes
    const auto& first = ring.rings.front();
    const bool crosses = ring.reaches_mirrors ||
                         std::any_of(first.begin(), first.end(), [&](const RingLocation& m) { return m.node != first.front().node; });
    const bool single = !crosses && first.size() < 2;
    if (!single) {
      const std::vector<int> nics = crosses ? ring_nics(b, profile, first) : std::vector<int>{-1};
      for (std::size_t ch = 0; ch < nics.size(); ++ch) {
        std::vector<Route> all;
        // Each identical ring takes its own channel NICs (those near its own members).
        for (const auto& one : ring.rings) {
          const std::vector<int> own = crosses ? ring_nics(b, profile, one) : std::vector<int>{-1};
          all.push_back(ring_route(b, one, ring.reaches_mirrors, own[ch % own.size()]));
        }
        auto* src = zone->create_host(fmt::format("ring{}.{}.src", r, ch), 1.0)->seal();
        auto* dst = zone->create_host(fmt::format("ring{}.{}.dst", r, ch), 1.0)->seal();
        route.caps.push_back(b.simplex(fmt::format("ring{}.{}.cap", r, ch), UNCAPPED));
        adjustable.insert(route.caps.back());
        std::vector<sg::LinkInRoute> links{sg::LinkInRoute(route.caps.back())};
        for (const auto& h : Builder::weighted(all.front(), Builder::count(all))) links.push_back(h);
        add_route(src, dst, links);
        route.channels.push_back({src, dst});
        ring_links.push_back(routes.size() - 1);
      }
    }
    rings_.push_back(std::move(route));
    channel_links.push_back(std::move(ring_links));
  }

  for (std::size_t t = 0; t < spec.transfers.size(); ++t) {
    const TransferSpec& x = spec.transfers[t];
    const PlatformGpu& a = spec.gpus[static_cast<std::size_t>(x.src)];
    const PlatformGpu& c = spec.gpus[static_cast<std::size_t>(x.dst)];
    const std::vector<int> from = copies_of(a), to = copies_of(c);
    std::vector<Route> all;
    for (std::size_t j = 0; j < from.size(); ++j) {
      const int dst_gpu = to[std::min(j, to.size() - 1)];
      Route one;
      if (a.node == c.node) b.intra_hop(a.node, from[j], dst_gpu, one);
      else b.network_hop(a.node, from[j], c.node, dst_gpu, b.nic_near(from[j]), one);
      all.push_back(std::move(one));
    }
    TransferRoute route;
    route.src = zone->create_host(fmt::format("xfer{}.src", t), 1.0)->seal();
    route.dst = zone->create_host(fmt::format("xfer{}.dst", t), 1.0)->seal();
    route.latency_s = a.node == c.node ? profile.intra_node.latency_us * 1e-6
                                       : (profile.nic.latency_us + profile.inter_node.latency_us) * 1e-6;
    std::vector<sg::LinkInRoute> links;
    for (const auto& h : Builder::weighted(all.front(), Builder::count(all))) links.push_back(h);
    add_route(route.src, route.dst, links);
    transfers_.push_back(route);
  }
  if (drop_implied) drop_implied_links(routes, adjustable);
  // How often every directed link is listed across all routes: a ring nothing else shares is
  // timed in closed form (below).
  std::map<Hop, int> usage;
  for (const PendingRoute& route : routes) {
    for (const auto& l : route.links) ++usage[hop_of(l)];
    zone->add_route(route.from->get_netpoint(), route.to->get_netpoint(), nullptr, nullptr, route.links, false);
  }
  // A channel whose links no other route lists (the ring's other channels included) runs alone
  // whenever it runs (a ring's collectives follow each other on one stream; the engine checks):
  // its rate is its bottleneck's share, known now, and the engine times it in closed form instead
  // of as a flow (exact: what the sharing model would compute for a lone flow).
  for (std::size_t r = 0; r < rings_.size(); ++r) {
    for (std::size_t ch = 0; ch < channel_links[r].size(); ++ch) {
      std::map<Hop, int> own;
      for (const auto& l : routes[channel_links[r][ch]].links) ++own[hop_of(l)];
      double rate = UNCAPPED;
      bool exclusive = true;
      for (const auto& [hop, count] : own) {
        if (hop.link == rings_[r].caps[ch]) continue;
        exclusive = exclusive && usage[hop] == count;
        rate = std::min(rate, hop.link->get_bandwidth() / count);
      }
      rings_[r].exclusive_rates.push_back(exclusive ? rate : 0.0);
    }
  }
  std::map<int, int> distinct;
  for (const auto& g : spec.gpus) distinct[g.node] = 1;
  nodes_ = static_cast<int>(distinct.size());
  zone->seal();
}

}  // namespace trainsim::sim
