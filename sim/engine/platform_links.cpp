#include "platform_links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "implied_links.hpp"

namespace trainsim::sim::detail {

void Builder::intra_hop(int n, int from, int to, Route& r) {
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

void Builder::network_hop(int a, int from, int b, int to, int nic, Route& r) {
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

std::vector<sg::LinkInRoute> Builder::weighted(const Route& own, const std::map<Hop, int>& uses) {
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

std::map<Hop, int> Builder::count(const std::vector<Route>& routes) {
  std::map<Hop, int> uses;
  for (const Route& r : routes) {
    for (const Hop& h : r) ++uses[h];
  }
  return uses;
}

NodeLinks Builder::build_node(int n) {
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
  for (int s = 0; s < topology_.switches(); ++s) l.uplink.push_back(duplex(fmt::format("n{}.pcie_switch{}", n, s), p_.pcie.switch_uplink_GBps * 1e9));
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

std::vector<int> copies_of(const PlatformGpu& g) { return g.copy_gpus.empty() ? std::vector<int>{g.gpu} : g.copy_gpus; }

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
    const auto [entry, exit] = b.topology().channel_ends(gpus, nic);
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

}  // namespace trainsim::sim::detail
