#include "platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "platform_links.hpp"

namespace trainsim::sim {

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

using namespace detail;  // the links and routes (platform_links.hpp)

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
    adjustable.insert({h2d_caps_.back(), d2h_caps_.back()});
    if (l.storage_mixed != nullptr) adjustable.insert(l.storage_mixed);
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
      const std::vector<int> nics = crosses ? b.topology().ring_nics(first) : std::vector<int>{-1};
      for (std::size_t ch = 0; ch < nics.size(); ++ch) {
        std::vector<Route> all;
        // Each identical ring takes its own channel NICs (those near its own members).
        for (const auto& one : ring.rings) {
          const std::vector<int> own = crosses ? b.topology().ring_nics(one) : std::vector<int>{-1};
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
