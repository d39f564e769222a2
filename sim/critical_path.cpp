#include "critical_path.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "cost_model.hpp"
#include "engine.hpp"
#include "placement.hpp"
#include "platform.hpp"
#include "program/data_parallel_program.hpp"

namespace trainsim::sim {
namespace {

// The fastest a ring collective of one group kind can move its hop bytes, for the simulated rank
// (rank 0, as the fold simulates it): within a node no faster than a GPU's port into the fabric
// (or its PCIe link, whichever is faster); leaving the node, no faster than the node's NICs
// shared by the distinct rings of the rank's copies on that node (placement.hpp, platform.cpp).
struct RingLimit {
  int size = 1;
  int nodes = 1;
  double rate = 0;  // bytes/s; 0: not a ring (one member)
};

RingLimit ring_limit(const Placement& placement, GroupKind kind, int copies, const hw::ClusterProfile& p) {
  RingLimit out;
  const std::vector<int> members = placement.group(0, kind);
  out.size = static_cast<int>(members.size());
  if (out.size < 2) return out;
  std::vector<int> nodes;
  int on_first_node = 0;
  for (int r : members) {
    const int node = placement.location(r).node;
    nodes.push_back(node);
    if (node == placement.location(0).node) ++on_first_node;
  }
  std::sort(nodes.begin(), nodes.end());
  out.nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
  const double port = std::max(p.intra_node.link_GBps, p.pcie.link_GBps) * 1e9;
  const double nics = p.nic.count * p.nic.link_Gbps * 1e9 / 8;
  if (out.nodes == 1) {
    out.rate = port;
  } else {
    const int rings = std::max(1, copies / std::max(1, on_first_node));
    out.rate = std::min(std::max(port, nics), nics / rings);
  }
  return out;
}

class Walk {
 public:
  Walk(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& p, const CostModel& costs)
      : p_(p), costs_(costs), placement_(s.tp, s.dp, s.pp, p.gpus_per_node()) {
    const FoldPlan fold = plan_fold(placement_, true);
    copies_ = fold.ranks.front().copies;
    tensor_ = ring_limit(placement_, GroupKind::TENSOR, copies_, p);
    data_ = ring_limit(placement_, GroupKind::DATA, copies_, p);
    pcie_ = p.pcie.link_GBps * 1e9;
    host_path_ = p.pcie.host_aggregate_GBps * 1e9;
    read_ = p.storage.read_GBps * p.storage.count * 1e9;
    write_ = p.storage.write_GBps * p.storage.count * 1e9;
    cpu_ = cpu_adam_params_per_s(p);
    (void)m;
  }

  double seconds(const Instruction& in) const {
    switch (in.kind) {
      case InstrKind::COMPUTE: return in.seconds;
      case InstrKind::MEMORY: return 0;
      case InstrKind::HOST_COMPUTE: return in.seconds > 0 ? in.seconds : per_share(in.params, cpu_);
      case InstrKind::COPY: return copy_seconds(in);
      case InstrKind::COLLECTIVE: return collective_seconds(in);
      case InstrKind::SEND:
      case InstrKind::RECV: break;
    }
    throw std::logic_error("critical path: a data-parallel program with a pipeline instruction");
  }

 private:
  // `amount` of every copy of the rank through one resource of the node.
  double per_share(double amount, double rate) const { return rate > 0 ? amount * copies_ / rate : 0.0; }

  double copy_seconds(const Instruction& in) const {
    if (in.bytes <= 0) return 0;
    if (in.from == Tier::STORAGE) return per_share(in.bytes, read_);
    if (in.to == Tier::STORAGE) return per_share(in.bytes, write_);
    const OpKind kind = in.to == Tier::GPU ? OpKind::COPY_H2D : OpKind::COPY_D2H;
    const double cap = costs_.copy_cap(kind, in.bytes);
    double t = std::max(pcie_ > 0 ? in.bytes / pcie_ : 0.0, per_share(in.bytes, host_path_));
    if (cap > 0) t = std::max(t, in.bytes / cap);
    return t;
  }

  double collective_seconds(const Instruction& in) const {
    const RingLimit& ring = in.group == GroupKind::TENSOR ? tensor_ : in.group == GroupKind::DATA ? data_ : none_;
    if (ring.size < 2 || ring.rate <= 0) return 0;
    const double latency = ring_latency_s(p_, ring_steps(in.collective, ring.size), ring.size, ring.nodes);
    return latency + ring_hop_bytes(in.collective, in.bytes, ring.size) / ring.rate;
  }

  const hw::ClusterProfile& p_;
  const CostModel& costs_;
  Placement placement_;
  int copies_ = 1;
  RingLimit tensor_, data_, none_;
  double pcie_ = 0, host_path_ = 0, read_ = 0, write_ = 0, cpu_ = 0;
};

}  // namespace

std::optional<double> contention_free_step_s(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                             const wl::MemoryEstimate& memory) {
  if (s.pp > 1 || s.schedule == wl::Schedule::HYDRA) return std::nullopt;
  const CostModel costs(profile, m.numerics);
  const ProgramSet set = build_data_parallel_program(m, s, costs, memory, profile.gpus_per_node());
  const Program& program = set.stages.front();
  const Walk walk(m, s, profile, costs);

  constexpr std::size_t STREAM_COUNT = static_cast<std::size_t>(Stream::HOST) + 1;
  std::array<double, STREAM_COUNT> stream_free{};
  std::vector<double> end(program.instructions.size(), 0.0);
  double makespan = 0;
  for (std::size_t i = 0; i < program.instructions.size(); ++i) {
    const Instruction& in = program.instructions[i];
    double start = 0;
    for (int a : in.after) start = std::max(start, end[static_cast<std::size_t>(a)]);
    // Same-stream instructions run in program order, except the node's (task_graph.cpp: chain).
    const auto stream = static_cast<std::size_t>(in.stream);
    const bool ordered = in.stream != Stream::NODE;
    if (ordered) start = std::max(start, stream_free[stream]);
    end[i] = start + walk.seconds(in);
    if (ordered) stream_free[stream] = end[i];
    makespan = std::max(makespan, end[i]);
  }
  if (set.steps <= 1) return makespan;
  // The replay's steady state: between the ends of the first and the last step (simulator.cpp).
  auto step_end = [&](const std::vector<int>& ends) {
    double t = 0;
    for (int i : ends) t = std::max(t, end[static_cast<std::size_t>(i)]);
    return t;
  };
  return (step_end(program.step_ends.back()) - step_end(program.step_ends.front())) / (set.steps - 1);
}

}  // namespace trainsim::sim
