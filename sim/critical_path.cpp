#include "critical_path.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "cost_model.hpp"
#include "engine.hpp"
#include "micro_batch_fold.hpp"
#include "nccl_collective.hpp"
#include "pcie_topology.hpp"
#include "stage_partition.hpp"
#include "placement.hpp"
#include "platform.hpp"
#include "data_parallel_program.hpp"
#include "pipeline_program.hpp"

namespace trainsim::sim {
namespace {

// The fastest a ring collective can move its hop bytes for a simulated rank: within a node no
// faster than a GPU's port into the fabric (or its PCIe link, whichever is faster); leaving the
// node, no faster than the node's NICs shared by the distinct rings of the rank's copies on that
// node (placement.hpp, platform.cpp).
struct RingLimit {
  int size = 1;
  int nodes = 1;
  double rate = 0;  // bytes/s; 0: not a ring (one member)
  std::optional<NcclComm> nccl;  // NCCL's view of the group, where the profile names its NCCL
};

struct Rates {
  double port = 0, nics = 0, nic = 0, pcie = 0, host_path = 0, read = 0, write = 0, cpu = 0;
  explicit Rates(const hw::ClusterProfile& p)
      : port(std::max(p.intra_node.link_GBps, p.pcie.link_GBps) * 1e9), nics(p.nic.count * p.nic.link_Gbps * 1e9 / 8),
        nic(p.nic.link_Gbps * 1e9 / 8), pcie(p.pcie.link_GBps * 1e9), host_path(p.pcie.host_aggregate_GBps * 1e9),
        read(p.storage.read_GBps * p.storage.count * 1e9), write(p.storage.write_GBps * p.storage.count * 1e9),
        cpu(cpu_adam_params_per_s(p)) {}
};

RingLimit ring_limit(const hw::ClusterProfile& p, const Placement& placement, int rank, GroupKind kind, int copies, const Rates& r,
                     const PcieTopology& topology) {
  RingLimit out;
  const std::vector<int> members = placement.group(rank, kind);
  out.size = static_cast<int>(members.size());
  if (out.size < 2) return out;
  const int home = placement.location(rank).node;
  std::vector<int> nodes;
  int at_home = 0;
  for (int m : members) {
    nodes.push_back(placement.location(m).node);
    if (nodes.back() == home) ++at_home;
  }
  std::sort(nodes.begin(), nodes.end());
  out.nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
  if (out.nodes == 1) {
    out.rate = r.port;
  } else {
    const int rings = std::max(1, copies / std::max(1, at_home));
    out.rate = std::min(std::max(r.port, r.nics), r.nics / rings);
    // No faster than its channels, as the platform builds them (pcie_topology.hpp).
    if (r.pcie > 0 && r.nic > 0) out.rate = std::min(out.rate, crossing_ring_rate(topology, placement, members, r.pcie, r.nic));
  }
  out.nccl = nccl_comm(p, topology, placement, members);
  return out;
}

// Durations of one simulated rank's instructions, each no longer than the replay's.
class Durations {
 public:
  Durations(const hw::ClusterProfile& p, const CostModel& costs, const Placement& placement, const ExplicitRank& rank,
            const FoldPlan& fold)
      : p_(p), costs_(costs), r_(p), copies_(rank.copies), node_(rank.location.node) {
    const PcieTopology topology(p);
    for (GroupKind k : {GroupKind::TENSOR, GroupKind::DATA, GroupKind::PIPELINE, GroupKind::EMBEDDING}) {
      rings_[static_cast<std::size_t>(k)] = ring_limit(p, placement, rank.rank, k, copies_, r_, topology);
    }
    for (const ExplicitRank& e : fold.ranks) stage_node_.push_back(e.location.node);
  }

  double seconds(const Instruction& in) const {
    switch (in.kind) {
      case InstrKind::COMPUTE: return in.seconds;
      case InstrKind::MEMORY:
      case InstrKind::RECV: return 0;  // a receive ends when its send has arrived
      case InstrKind::HOST_COMPUTE: return in.seconds > 0 ? in.seconds : shared(in.params, r_.cpu);
      case InstrKind::COPY: return copy_seconds(in);
      case InstrKind::COLLECTIVE: return collective_seconds(in);
      case InstrKind::SEND: return send_seconds(in);
    }
    throw std::logic_error("critical path: unknown instruction kind");
  }

 private:
  // `amount` of every copy of the rank through one resource of its node.
  double shared(double amount, double rate) const { return rate > 0 ? amount * copies_ / rate : 0.0; }

  double copy_seconds(const Instruction& in) const {
    if (in.bytes <= 0) return 0;
    if (in.from == Tier::STORAGE) return shared(in.bytes, r_.read);
    if (in.to == Tier::STORAGE) return shared(in.bytes, r_.write);
    const double cap = costs_.copy_cap(in.to == Tier::GPU ? OpKind::COPY_H2D : OpKind::COPY_D2H, in.bytes);
    double t = std::max(r_.pcie > 0 ? in.bytes / r_.pcie : 0.0, shared(in.bytes, r_.host_path));
    if (cap > 0) t = std::max(t, in.bytes / cap);
    return p_.pcie.latency_us * 1e-6 + t;  // the replay's delay before the bytes move (engine.cpp)
  }

  double collective_seconds(const Instruction& in) const {
    const RingLimit& ring = rings_[static_cast<std::size_t>(in.group)];
    if (ring.size < 2 || ring.rate <= 0) return 0;
    // The replay's latency and NCCL's cap (nccl_collective.hpp); its flows are no faster than
    // the ring's rate.
    const CollectiveTiming t = collective_timing(p_, in.collective, in.bytes, ring.size, ring.nodes, ring.nccl);
    const double rate = t.hop_cap_Bps > 0 ? std::min(ring.rate, t.hop_cap_Bps) : ring.rate;
    return t.latency_s + ring_hop_bytes(in.collective, in.bytes, ring.size) / rate;
  }

  // To the next stage's simulated rank: over the fabric within a node, else through the NICs
  // that every copy's transfer shares (platform.cpp: transfers).
  double send_seconds(const Instruction& in) const {
    if (in.bytes <= 0) return 0;
    const bool same_node = stage_node_.at(static_cast<std::size_t>(in.peer_stage)) == node_;
    const double latency = same_node ? p_.intra_node.latency_us * 1e-6 : (p_.nic.latency_us + p_.inter_node.latency_us) * 1e-6;
    const double rate = same_node ? r_.port : std::min(std::max(r_.port, r_.nics), r_.nics / copies_);
    return latency + (rate > 0 ? in.bytes / rate : 0.0);
  }

  const hw::ClusterProfile& p_;
  const CostModel& costs_;
  Rates r_;
  int copies_ = 1;
  int node_ = 0;
  std::array<RingLimit, 4> rings_{};
  std::vector<int> stage_node_;
};

// The programs of every stage walked together in dependency order (Kahn's algorithm over the
// instructions: `after`, the previous instruction of the same stream except the node's
// (task_graph.cpp), a receive's send, and the members of a collective that two stages' ranks
// join (the tied embedding's), which starts once every member is ready).
class Walker {
 public:
  Walker(const ProgramSet& set, const std::vector<Durations>& durations, const FoldPlan& fold, const Placement& placement)
      : set_(set) {
    for (const Program& p : set.stages) {
      offset_.push_back(total_);
      total_ += static_cast<int>(p.instructions.size());
    }
    pending_.assign(static_cast<std::size_t>(total_), 0);
    ready_.assign(static_cast<std::size_t>(total_), 0.0);
    end_.assign(static_cast<std::size_t>(total_), 0.0);
    duration_.assign(static_cast<std::size_t>(total_), 0.0);
    group_of_.assign(static_cast<std::size_t>(total_), -1);
    edges_.reserve(static_cast<std::size_t>(total_) * 3);  // about two per instruction: `after` and its stream
    std::map<std::tuple<int, int, std::int64_t>, int> sends;                       // (from, to, tag) -> node
    std::map<std::tuple<int, int, std::int64_t>, std::vector<int>> collectives;    // (kind, first member, tag) -> nodes
    for (std::size_t st = 0; st < set.stages.size(); ++st) {
      const auto& ins = set.stages[st].instructions;
      const int rank = fold.ranks.at(st).rank;
      for (std::size_t i = 0; i < ins.size(); ++i) {
        const int v = node(st, i);
        duration_[static_cast<std::size_t>(v)] = durations[st].seconds(ins[i]);
        if (ins[i].kind == InstrKind::SEND) sends[{static_cast<int>(st), ins[i].peer_stage, ins[i].tag}] = v;
        // Only the tied embedding's group spans stages; a stage's own groups have one member here.
        if (ins[i].kind == InstrKind::COLLECTIVE && (ins[i].group == GroupKind::EMBEDDING || ins[i].group == GroupKind::PIPELINE)) {
          const int first = placement.group(rank, ins[i].group).front();
          const std::int64_t tag = ins[i].tag >= 0 ? ins[i].tag : -1 - static_cast<std::int64_t>(i);
          collectives[{static_cast<int>(ins[i].group), first, tag}].push_back(v);
        }
      }
    }
    for (const auto& [key, members] : collectives) {
      if (members.size() < 2) continue;
      for (int v : members) group_of_[static_cast<std::size_t>(v)] = static_cast<int>(groups_.size());
      groups_.push_back({members, 0, 0.0});
    }
    for (std::size_t st = 0; st < set.stages.size(); ++st) {
      const auto& ins = set.stages[st].instructions;
      std::array<int, static_cast<std::size_t>(Stream::HOST) + 1> last;
      last.fill(-1);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        const int v = node(st, i);
        for (int a : ins[i].after) edge(node(st, static_cast<std::size_t>(a)), v);
        const auto stream = static_cast<std::size_t>(ins[i].stream);
        if (ins[i].stream != Stream::NODE) {
          if (last[stream] >= 0) edge(last[stream], v);
          last[stream] = v;
        }
        if (ins[i].kind == InstrKind::RECV) {
          const auto it = sends.find({ins[i].peer_stage, static_cast<int>(st), ins[i].tag});
          if (it == sends.end()) throw std::logic_error("critical path: a receive without its send");
          edge(it->second, v);
        }
      }
    }
    // Successors in one array by instruction (a list per instruction cost an allocation each).
    succ_start_.assign(static_cast<std::size_t>(total_) + 1, 0);
    for (const auto& [from, to] : edges_) ++succ_start_[static_cast<std::size_t>(from) + 1];
    for (std::size_t v = 0; v < static_cast<std::size_t>(total_); ++v) succ_start_[v + 1] += succ_start_[v];
    succ_.resize(edges_.size());
    std::vector<std::size_t> fill(succ_start_.begin(), succ_start_.end() - 1);
    for (const auto& [from, to] : edges_) succ_[fill[static_cast<std::size_t>(from)]++] = to;
    edges_.clear();
    edges_.shrink_to_fit();
  }

  // Every instruction's end; throws if the programs cannot all run (a cycle).
  void run() {
    std::vector<int> queue;
    for (int v = 0; v < total_; ++v) {
      if (pending_[static_cast<std::size_t>(v)] == 0) queue.push_back(v);
    }
    int done = 0;
    while (!queue.empty()) {
      const int v = queue.back();
      queue.pop_back();
      const int g = group_of_[static_cast<std::size_t>(v)];
      if (g < 0) {
        complete(v, ready_[static_cast<std::size_t>(v)] + duration_[static_cast<std::size_t>(v)], queue, done);
        continue;
      }
      Group& grp = groups_[static_cast<std::size_t>(g)];
      grp.start = std::max(grp.start, ready_[static_cast<std::size_t>(v)]);
      if (++grp.arrived < static_cast<int>(grp.members.size())) continue;
      double d = 0;
      for (int m : grp.members) d = std::max(d, duration_[static_cast<std::size_t>(m)]);
      for (int m : grp.members) complete(m, grp.start + d, queue, done);
    }
    if (done != total_) throw std::logic_error("critical path: the programs wait on each other in a cycle");
  }

  double makespan() const { return end_.empty() ? 0.0 : *std::max_element(end_.begin(), end_.end()); }
  double step_end(std::size_t step) const {
    double t = 0;
    for (std::size_t st = 0; st < set_.stages.size(); ++st) {
      const auto& ends = set_.stages[st].step_ends;
      if (step >= ends.size()) continue;
      for (int i : ends[step]) t = std::max(t, end_[static_cast<std::size_t>(node(st, static_cast<std::size_t>(i)))]);
    }
    return t;
  }

 private:
  struct Group {
    std::vector<int> members;
    int arrived = 0;
    double start = 0;
  };

  int node(std::size_t stage, std::size_t i) const { return offset_[stage] + static_cast<int>(i); }
  void edge(int from, int to) {
    edges_.emplace_back(from, to);
    ++pending_[static_cast<std::size_t>(to)];
  }
  void complete(int v, double end, std::vector<int>& queue, int& done) {
    end_[static_cast<std::size_t>(v)] = end;
    ++done;
    const auto v_at = static_cast<std::size_t>(v);
    for (std::size_t e = succ_start_[v_at]; e < succ_start_[v_at + 1]; ++e) {
      const int w = succ_[e];
      ready_[static_cast<std::size_t>(w)] = std::max(ready_[static_cast<std::size_t>(w)], end);
      if (--pending_[static_cast<std::size_t>(w)] == 0) queue.push_back(w);
    }
  }

  const ProgramSet& set_;
  std::vector<int> offset_;
  int total_ = 0;
  std::vector<std::pair<int, int>> edges_;  // while building: (from, to)
  std::vector<std::size_t> succ_start_;     // successors of v: succ_[succ_start_[v], succ_start_[v + 1])
  std::vector<int> succ_;
  std::vector<int> pending_, group_of_;
  std::vector<double> ready_, end_, duration_;
  std::vector<Group> groups_;
};

// Beyond this many instructions the walk is not worth its time against a replay.
constexpr std::size_t MAX_WALK_INSTRUCTIONS = 1500000;

class Walk {
 public:
  Walk(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& p, const wl::MemoryEstimate& memory)
      : m_(m), s_(s), p_(p), memory_(memory), costs_(p, m.numerics, s.stack), placement_(s.tp, s.dp, s.pp, p.gpus_per_node()),
        fold_(plan_fold(placement_, true)) {
    for (const ExplicitRank& e : fold_.ranks) durations_.emplace_back(p_, costs_, placement_, e, fold_);
  }

  // The step with `micro_batches` per step (0: the strategy's), as the simulator measures it:
  // the makespan, or over several steps the steady state between the first and last step ends.
  std::optional<double> at(int micro_batches) {
    const auto it = walked_.find(micro_batches);
    if (it != walked_.end()) return it->second;
    // Without the trailing step (program/program.hpp): the ends it measures are the same.
    const ProgramSet set =
        s_.pp > 1 ? build_pipeline_programs(m_, s_, costs_, memory_, micro_batches, TrailingStep::OMIT).programs
                  : build_data_parallel_program(m_, s_, costs_, memory_, p_.gpus_per_node(), micro_batches, TrailingStep::OMIT);
    std::size_t size = 0;
    for (const Program& pr : set.stages) size += pr.instructions.size();
    std::optional<double> out;
    if (size <= MAX_WALK_INSTRUCTIONS) {
      Walker w(set, durations_, fold_, placement_);
      w.run();
      steps_ = set.measured_steps;
      const auto last = static_cast<std::size_t>(set.measured_steps - 1);
      const auto first = static_cast<std::size_t>(std::max(0, set.measured_steps - STEADY_STATE_STEPS));
      out = set.measured_steps <= 1 ? w.makespan() : (w.step_end(last) - w.step_end(first)) / static_cast<double>(last - first);
    }
    walked_.emplace(micro_batches, out);
    return out;
  }

  // The simulator's micro-batch fold (micro_batch_fold.hpp) on the walk: where the walk grows
  // evenly over three counts, the line is extended to the strategy's count; otherwise the whole
  // count is walked.
  std::optional<double> step() {
    const std::int64_t m = s_.micro_batches();
    // The stage kinds' periods too: the walk's increments alternate as the replay's do, and a
    // line through three counts one apart would overshoot its own full count.
    const std::vector<int> kinds = s_.pp > 1 ? stage_kind_counts(wl::partition_stages(m_, s_)) : std::vector<int>{};
    for (const FoldTry& t : fold_tries(s_, m, kinds)) {
      const std::optional<double> a = at(t.b), c = at(t.b + t.k), e = at(t.b + 2 * t.k);
      if (!a || !c || !e) return std::nullopt;
      if (grows_evenly(*a, *c, *e)) return extend(*c, *e, m, t);
    }
    return at(0);
  }
  int steps() const { return steps_; }

 private:
  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const hw::ClusterProfile& p_;
  const wl::MemoryEstimate& memory_;
  CostModel costs_;
  Placement placement_;
  FoldPlan fold_;
  std::vector<Durations> durations_;
  std::map<int, std::optional<double>> walked_;
  int steps_ = 1;
};

}  // namespace

std::optional<StepWalk> contention_free_step(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                             const wl::MemoryEstimate& memory) {
  if (s.schedule == wl::Schedule::HYDRA) return std::nullopt;
  Walk walk(m, s, profile, memory);
  const std::optional<double> step = walk.step();
  if (!step) return std::nullopt;
  return StepWalk{*step, walk.steps()};
}

double walk_bound_s(const StepWalk& w) { return w.step_s * (1 - WALK_ROOM); }

}  // namespace trainsim::sim
