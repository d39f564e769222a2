#include "platform.hpp"

#include <fmt/format.h>

#include <simgrid/s4u.hpp>

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

namespace {

struct Builder {
  const hw::ClusterProfile& p;
  sg::NetZone* zone;
  int gpus;
  int switches;
  std::vector<sg::Link*> nvlink, pcie, uplink, nic;
  std::vector<std::vector<sg::Link*>> mesh;  // nvlink_mesh: mesh[a][b], a < b
  sg::Link* host_path = nullptr;
  sg::Link* spine = nullptr;
  sg::Link* copy_latency = nullptr;

  sg::Link* duplex(const std::string& name, double GBps) {
    return zone->create_split_duplex_link(name, GBps * 1e9)->set_latency(0)->seal();
  }

  int switch_of_gpu(int g) const { return g / p.pcie.gpus_per_switch; }
  int switch_of_nic(int c) const { return c * switches / std::max(1, p.nic.count); }

  // The links of one GPU-to-GPU hop inside the node.
  void hop(int from, int to, std::vector<sg::LinkInRoute>& route) const {
    switch (p.intra_node.fabric) {
      case hw::IntraNodeFabric::NVSWITCH:
        route.emplace_back(nvlink[static_cast<std::size_t>(from)], Dir::UP);
        route.emplace_back(nvlink[static_cast<std::size_t>(to)], Dir::DOWN);
        break;
      case hw::IntraNodeFabric::NVLINK_MESH: {
        const int a = std::min(from, to), b = std::max(from, to);
        route.emplace_back(mesh[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)], from < to ? Dir::UP : Dir::DOWN);
        break;
      }
      case hw::IntraNodeFabric::PCIE_ONLY: {
        route.emplace_back(pcie[static_cast<std::size_t>(from)], Dir::UP);
        const int sa = switch_of_gpu(from), sb = switch_of_gpu(to);
        if (sa != sb) {
          route.emplace_back(uplink[static_cast<std::size_t>(sa)], Dir::UP);
          route.emplace_back(uplink[static_cast<std::size_t>(sb)], Dir::DOWN);
        }
        route.emplace_back(pcie[static_cast<std::size_t>(to)], Dir::DOWN);
        break;
      }
    }
  }
};

}  // namespace

Platform::Platform(const hw::ClusterProfile& profile, const PlatformShape& shape, const std::vector<RingSpec>& rings) {
  sg::NetZone* zone = sg::create_full_zone("node");
  Builder b{profile, zone, shape.local_gpus, 0, {}, {}, {}, {}, {}, nullptr, nullptr, nullptr};
  b.switches = (shape.local_gpus + profile.pcie.gpus_per_switch - 1) / profile.pcie.gpus_per_switch;

  for (int g = 0; g < shape.local_gpus; ++g) gpus_.push_back(zone->create_host(fmt::format("gpu{}", g), GPU_SPEED)->seal());
  cpu_ = zone->create_host("cpu", cpu_adam_params_per_s(profile))->seal();
  // Delays (collective latency) run here: as many cores as delays can ever overlap.
  delay_ = zone->create_host("delay", 1.0)->set_core_count(1 << 20)->seal();
  if (profile.storage.kind != hw::StorageKind::NONE && profile.storage.count > 0) {
    // Drives are striped (DeepSpeed's aio across a RAID-0 of the node's NVMe): one device with
    // the aggregate bandwidth, reads and writes each with their own.
    storage_ = zone->create_host("storage", 1.0)->seal();
    auto* read = zone->create_link("storage_read", profile.storage.read_GBps * profile.storage.count * 1e9)->set_latency(0)->seal();
    auto* write = zone->create_link("storage_write", profile.storage.write_GBps * profile.storage.count * 1e9)->set_latency(0)->seal();
    zone->add_route(storage_->get_netpoint(), cpu_->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(read)}, false);
    zone->add_route(cpu_->get_netpoint(), storage_->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(write)}, false);
  }

  for (int g = 0; g < shape.local_gpus; ++g) {
    b.pcie.push_back(b.duplex(fmt::format("pcie{}", g), profile.pcie.link_GBps));
    if (profile.intra_node.fabric == hw::IntraNodeFabric::NVSWITCH && shape.local_gpus > 1) {
      b.nvlink.push_back(b.duplex(fmt::format("nvlink{}", g), profile.intra_node.link_GBps));
    }
  }
  if (profile.intra_node.fabric == hw::IntraNodeFabric::NVLINK_MESH && shape.local_gpus > 1) {
    const double per_peer = profile.intra_node.link_GBps / (profile.gpus_per_node() - 1);
    b.mesh.assign(static_cast<std::size_t>(shape.local_gpus), std::vector<sg::Link*>(static_cast<std::size_t>(shape.local_gpus), nullptr));
    for (int x = 0; x < shape.local_gpus; ++x) {
      for (int y = x + 1; y < shape.local_gpus; ++y) {
        b.mesh[static_cast<std::size_t>(x)][static_cast<std::size_t>(y)] = b.duplex(fmt::format("nvlink{}-{}", x, y), per_peer);
      }
    }
  }
  for (int s = 0; s < b.switches; ++s) b.uplink.push_back(b.duplex(fmt::format("pcie_switch{}", s), profile.pcie.switch_uplink_GBps));
  b.host_path = b.duplex("host_memory_path", profile.pcie.host_aggregate_GBps);
  b.copy_latency = zone->create_link("pcie_latency", 1e18)
                       ->set_latency(profile.pcie.latency_us * 1e-6)
                       ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
                       ->seal();
  if (shape.multi_node) {
    for (int c = 0; c < profile.nic.count; ++c) b.nic.push_back(b.duplex(fmt::format("nic{}", c), profile.nic.link_Gbps / 8.0));
    if (profile.inter_node.oversubscription > 1.0) {
      // This node's even share of an oversubscribed spine.
      b.spine = b.duplex("spine_share", profile.nic.count * profile.nic.link_Gbps / 8.0 / profile.inter_node.oversubscription);
    }
  }

  // Host <-> GPU copies: the host memory path, the GPU's switch uplink and its own link.
  for (int g = 0; g < shape.local_gpus; ++g) {
    const auto s = static_cast<std::size_t>(b.switch_of_gpu(g));
    const auto gi = static_cast<std::size_t>(g);
    h2d_caps_.push_back(zone->create_link(fmt::format("h2d_cap{}", g), UNCAPPED)->set_latency(0)->seal());
    d2h_caps_.push_back(zone->create_link(fmt::format("d2h_cap{}", g), UNCAPPED)->set_latency(0)->seal());
    zone->add_route(cpu_->get_netpoint(), gpus_[gi]->get_netpoint(), nullptr, nullptr,
                    {sg::LinkInRoute(b.copy_latency), sg::LinkInRoute(h2d_caps_[gi]), {b.host_path, Dir::DOWN},
                     {b.uplink[s], Dir::DOWN}, {b.pcie[gi], Dir::DOWN}},
                    false);
    zone->add_route(gpus_[gi]->get_netpoint(), cpu_->get_netpoint(), nullptr, nullptr,
                    {sg::LinkInRoute(b.copy_latency), sg::LinkInRoute(d2h_caps_[gi]), {b.pcie[gi], Dir::UP},
                     {b.uplink[s], Dir::UP}, {b.host_path, Dir::UP}},
                    false);
  }

  // Rings: each channel is one flow over every link of the ring, so the ring runs at the pace
  // of its slowest link and loads every link it crosses equally (NCCL's ring pipeline).
  const double intra_latency = profile.intra_node.latency_us * 1e-6;
  const double inter_latency = (profile.nic.latency_us + profile.inter_node.latency_us) * 1e-6;
  for (std::size_t r = 0; r < rings.size(); ++r) {
    const RingSpec& spec = rings[r];
    RingRoute route;
    auto endpoint_pair = [&](std::size_t channel) {
      auto* src = zone->create_host(fmt::format("ring{}.{}.src", r, channel), 1.0)->seal();
      auto* dst = zone->create_host(fmt::format("ring{}.{}.dst", r, channel), 1.0)->seal();
      route.caps.push_back(zone->create_link(fmt::format("ring{}.{}.cap", r, channel), UNCAPPED)->set_latency(0)->seal());
      return std::make_pair(src, dst);
    };
    const int k = static_cast<int>(spec.members.size());
    if (!spec.crosses_nodes && k < 2) {
      // A group of one: its collectives move nothing.
    } else if (!spec.crosses_nodes) {
      std::vector<sg::LinkInRoute> links;
      auto ends = endpoint_pair(0);
      links.emplace_back(route.caps.back());
      for (int i = 0; i < k; ++i) b.hop(spec.members[static_cast<std::size_t>(i)], spec.members[static_cast<std::size_t>((i + 1) % k)], links);
      zone->add_route(ends.first->get_netpoint(), ends.second->get_netpoint(), nullptr, nullptr, links, false);
      route.channels.push_back(ends);
      route.step_latency_s = intra_latency;
    } else {
      // One channel per NIC near the members (NCCL keeps rings on the GPU's own PCIe switch);
      // all NICs if none is near. The ring enters at a member beside the NIC and leaves from
      // another one there, crossing every other member on the way.
      std::vector<int> nics;
      for (int c = 0; c < profile.nic.count; ++c) {
        for (int m : spec.members) {
          if (b.switch_of_gpu(m) == b.switch_of_nic(c)) {
            nics.push_back(c);
            break;
          }
        }
      }
      if (nics.empty()) {
        for (int c = 0; c < profile.nic.count; ++c) nics.push_back(c);
      }
      for (std::size_t ch = 0; ch < nics.size(); ++ch) {
        const int c = nics[ch];
        std::vector<int> order = spec.members;
        std::vector<int> near;
        for (int m : order) {
          if (b.switch_of_gpu(m) == b.switch_of_nic(c)) near.push_back(m);
        }
        const int entry = near.empty() ? order.front() : near.front();
        const int exit = near.size() > 1 ? near[1] : entry;
        std::erase(order, entry);
        std::erase(order, exit);
        order.insert(order.begin(), entry);
        if (exit != entry) order.push_back(exit);
        std::vector<sg::LinkInRoute> links;
        auto ends = endpoint_pair(ch);
        links.emplace_back(route.caps.back());
        for (std::size_t i = 0; i + 1 < order.size(); ++i) b.hop(order[i], order[i + 1], links);
        links.emplace_back(b.pcie[static_cast<std::size_t>(exit)], Dir::UP);
        links.emplace_back(b.nic[static_cast<std::size_t>(c)], Dir::UP);
        if (b.spine) {
          links.emplace_back(b.spine, Dir::UP);
          links.emplace_back(b.spine, Dir::DOWN);
        }
        links.emplace_back(b.nic[static_cast<std::size_t>(c)], Dir::DOWN);
        links.emplace_back(b.pcie[static_cast<std::size_t>(entry)], Dir::DOWN);
        zone->add_route(ends.first->get_netpoint(), ends.second->get_netpoint(), nullptr, nullptr, links, false);
        route.channels.push_back(ends);
      }
      route.step_latency_s = std::max(intra_latency, inter_latency);
    }
    rings_.push_back(std::move(route));
  }
  zone->seal();
}

}  // namespace trainsim::sim
