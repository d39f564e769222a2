#include "interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "nccl_collective.hpp"
#include "pcie_topology.hpp"

namespace trainsim::sim {
namespace {

class Interpreter {
 public:
  Interpreter(const ProgramSet& programs, const Placement& placement, const FoldPlan& fold, const CostModel& costs,
              const hw::ClusterProfile& profile)
      : programs_(programs), placement_(placement), fold_(fold), costs_(costs), profile_(profile),
        builder_(static_cast<int>(fold.ranks.size())) {
    for (std::size_t i = 0; i < fold.ranks.size(); ++i) {
      const ExplicitRank& e = fold.ranks[i];
      explicit_of_rank_[e.rank] = static_cast<int>(i);
      const auto node = std::lower_bound(fold.nodes.begin(), fold.nodes.end(), e.location.node) - fold.nodes.begin();
      out_.gpus.push_back({e, static_cast<int>(node)});
      out_.platform.gpus.push_back({e.location.node, e.location.gpu, e.copy_gpus});
    }
    out_.simulated_nodes = static_cast<int>(fold.nodes.size());
    out_.steps = programs.steps;
    out_.measured_steps = programs.measured_steps;
  }

  LoweredPrograms run() {
    done_.resize(fold_.ranks.size());
    // Every instruction becomes one op (a receive whose send is lowered later too).
    std::size_t ops = 0;
    for (std::size_t i = 0; i < fold_.ranks.size(); ++i) {
      for (const Instruction& in : program_of(static_cast<int>(i)).instructions) ops += in.host_seconds > 0 ? 2 : 1;
    }
    builder_.reserve(ops);
    for (std::size_t i = 0; i < fold_.ranks.size(); ++i) lower_rank(static_cast<int>(i));
    for (const auto& [key, pending] : pending_recvs_) {
      const auto it = sends_.find(key);
      if (it == sends_.end()) {
        throw std::logic_error(fmt::format("interpreter: a receive (tag {}) has no matching send", std::get<2>(key)));
      }
      for (OpId waiting : pending) boost::add_edge(it->second, waiting, builder_.graph());
    }
    out_.step_ends.assign(static_cast<std::size_t>(programs_.steps), {});
    for (std::size_t i = 0; i < fold_.ranks.size(); ++i) {
      const Program& prog = program_of(static_cast<int>(i));
      for (std::size_t s = 0; s < prog.step_ends.size() && s < out_.step_ends.size(); ++s) {
        for (int instr : prog.step_ends[s]) out_.step_ends[s].push_back(done_[i][static_cast<std::size_t>(instr)]);
      }
    }
    caps_.resize(boost::num_vertices(builder_.graph()), 0.0);
    out_.caps.per_op = std::move(caps_);
    out_.caps.interference = profile_.calibration.interference;
    out_.graph = builder_.take();
    return std::move(out_);
  }

 private:
  const Program& program_of(int g) const {
    const int stage = fold_.ranks[static_cast<std::size_t>(g)].coord.pp;
    return programs_.stages.size() == 1 ? programs_.stages.front() : programs_.stages.at(static_cast<std::size_t>(stage));
  }

  // Memory effects of an instruction on simulated GPU g: host and storage bytes count once per
  // copy g stands for (its copies allocate on the same node).
  void effects(const Instruction& in, int g, Op& op) const {
    const SimulatedGpu& sg = out_.gpus[static_cast<std::size_t>(g)];
    for (const MemEffect& e : in.memory) {
      if (e.bytes == 0) continue;
      switch (e.tier) {
        case Tier::GPU: op.memory.push_back({Device::gpu(g), e.cls, e.bytes, e.at_end}); break;
        case Tier::HOST: op.memory.push_back({Device::host(sg.node_index), e.cls, e.bytes * sg.rank.copies, e.at_end}); break;
        case Tier::STORAGE:
          op.memory.push_back({Device::storage(sg.node_index), e.cls, e.bytes * sg.rank.copies, e.at_end});
          break;
      }
    }
  }

  Op base(const Instruction& in, OpKind kind, int g) const {
    Op op;
    op.kind = kind;
    op.category = in.category;
    op.stream = in.stream;
    op.gpu = g;
    op.name = in.name;
    op.layer = in.layer;
    op.micro_batch = in.micro_batch;
    op.step = in.step;
    effects(in, g, op);
    return op;
  }

  // `copy`: the copy instruction an H2D / D2H op lowers (its host memory and concurrency).
  OpId add(Op op, const std::vector<OpId>& deps, const Instruction* copy = nullptr) {
    double cap = 0;
    if (op.kind == OpKind::COLLECTIVE) cap = costs_.collective_cap(op.collective, op.group_size, op.bytes);
    if (op.kind == OpKind::COPY_H2D || op.kind == OpKind::COPY_D2H) {
      const double piece = copy != nullptr && copy->piece_bytes > 0 ? copy->piece_bytes : op.bytes;
      cap = copy != nullptr ? costs_.copy_cap(op.kind, piece, copy->pageable, copy->copiers)
                            : costs_.copy_cap(op.kind, op.bytes);
    }
    const OpId id = builder_.add(std::move(op), deps);
    if (cap > 0) {
      caps_.resize(id + 1, 0.0);
      caps_[id] = cap;
    }
    return id;
  }

  // The host stream: `in`'s host time, in order after the rank's earlier host work, running ahead
  // of the GPU. It waits for the GPU only where the step begins (the step's synchronize) and
  // for nothing else; every later GPU op of the rank that the host launches (collectives, copies,
  // sends) waits for the host to have reached it.
  OpId issue_on_host(const Instruction& in, int g, const std::vector<OpId>& deps, int action) {
    Op host;
    host.action = action;
    host.kind = OpKind::DELAY;
    host.category = Category::COMPUTE;
    host.stream = Stream::HOST;
    host.gpu = g;
    host.name = "host_dispatch";
    host.layer = in.layer;
    host.micro_batch = in.micro_batch;
    host.step = in.step;
    host.seconds = in.host_seconds;
    auto& step = host_step_[g];
    const bool new_step = step != in.step + 1;
    step = in.step + 1;
    const OpId id = builder_.add(std::move(host), new_step ? deps : std::vector<OpId>{});
    last_host_[g] = id;
    return id;
  }

  // The stack call a compute instruction belongs to (Op::action): one per (GPU, step, micro-batch,
  // chunk, pass), recompute counted in the backward that runs it (as host_dispatch.cpp charges
  // the per-micro-batch host time once per pass), the optimizer step one call per step.
  int action_of(const Instruction& in, int g) {
    ComputePass pass = in.pass;
    if (pass == ComputePass::RECOMPUTE) pass = ComputePass::BACKWARD;
    if (pass == ComputePass::OTHER) return -1;
    const int mb = pass == ComputePass::OPTIMIZER ? -1 : in.micro_batch;
    const int chunk = pass == ComputePass::OPTIMIZER ? 0 : in.chunk;
    const auto key = std::make_tuple(g, in.step, mb, chunk, static_cast<int>(pass));
    // A call's instructions mostly follow each other: the last one answers without a lookup.
    if (last_action_ >= 0 && key == last_action_key_) return last_action_;
    last_action_key_ = key;
    last_action_ = actions_.emplace(key, static_cast<int>(actions_.size())).first->second;
    return last_action_;
  }

  void lower_rank(int g) {
    const Program& prog = program_of(g);
    auto& done = done_[static_cast<std::size_t>(g)];
    done.assign(prog.instructions.size(), GraphBuilder::NONE);
    int position = 0;
    for (const Instruction& in : prog.instructions) {
      std::vector<OpId> deps;
      for (int a : in.after) deps.push_back(done[static_cast<std::size_t>(a)]);
      const bool launched = in.kind == InstrKind::COLLECTIVE || in.kind == InstrKind::SEND || in.kind == InstrKind::COPY;
      if (launched && last_host_.count(g)) deps.push_back(last_host_[g]);
      done[static_cast<std::size_t>(position)] = lower(in, g, position, deps);
      ++position;
    }
  }

  OpId lower(const Instruction& in, int g, int position, const std::vector<OpId>& deps) {
    switch (in.kind) {
      case InstrKind::COMPUTE: {
        Op op = base(in, OpKind::COMPUTE, g);
        op.seconds = per_dp_rank(in, g, in.seconds);
        op.flops = in.flops;
        op.gemm_seconds = in.gemm_seconds;
        op.attention_seconds = in.attention_seconds;
        op.gap_seconds = in.gap_seconds;
        op.action = action_of(in, g);
        std::vector<OpId> all = deps;
        if (in.host_seconds > 0) all.push_back(issue_on_host(in, g, deps, op.action));
        return add(std::move(op), all);
      }
      case InstrKind::HOST_COMPUTE: {
        if (in.seconds > 0) {
          // A framework's own CPU optimizer, timed from its calibration (cost_model.hpp).
          Op op = base(in, OpKind::DELAY, g);
          op.seconds = in.seconds;
          return add(std::move(op), deps);
        }
        Op op = base(in, OpKind::CPU, g);
        op.params = in.params;
        return add(std::move(op), deps);
      }
      case InstrKind::MEMORY: return add(base(in, OpKind::DELAY, g), deps);
      case InstrKind::COPY: return lower_copy(in, g, deps);
      case InstrKind::COLLECTIVE: return lower_collective(in, g, position, deps);
      case InstrKind::SEND: return lower_send(in, g, deps);
      case InstrKind::RECV: return lower_recv(in, g, deps);
    }
    throw std::logic_error("interpreter: unknown instruction kind");
  }

  // An amount that differs by data-parallel rank (Instruction::by_dp_rank): g's, else `value`.
  double per_dp_rank(const Instruction& in, int g, double value) const {
    if (in.by_dp_rank < 0) return value;
    if (fold_.folded) throw std::logic_error("interpreter: an amount by data-parallel rank in a folded replay");
    const int dp = fold_.ranks[static_cast<std::size_t>(g)].coord.dp;
    return program_of(g).by_dp_rank.at(static_cast<std::size_t>(in.by_dp_rank)).at(static_cast<std::size_t>(dp));
  }

  OpId lower_copy(const Instruction& in, int g, const std::vector<OpId>& deps) {
    OpKind kind;
    if (in.from == Tier::HOST && in.to == Tier::GPU) kind = OpKind::COPY_H2D;
    else if (in.from == Tier::GPU && in.to == Tier::HOST) kind = OpKind::COPY_D2H;
    else if (in.from == Tier::STORAGE && in.to == Tier::HOST) kind = OpKind::STORAGE_READ;
    else if (in.from == Tier::HOST && in.to == Tier::STORAGE) kind = OpKind::STORAGE_WRITE;
    else throw std::logic_error(fmt::format("interpreter: no direct copy from {} to {}", to_string(in.from), to_string(in.to)));
    Op op = base(in, kind, g);
    op.bytes = per_dp_rank(in, g, in.bytes);
    return add(std::move(op), deps, &in);
  }

  // The rings of a group instance as the platform sees them (placement.hpp: folding).
  RingSpec ring_of(int rank, GroupKind kind) const {
    const std::vector<int> members = placement_.group(rank, kind);
    RingSpec spec;
    std::vector<RingLocation> first;
    for (int m : members) {
      const GpuLocation at = placement_.location(m);
      const bool simulated_node = std::binary_search(fold_.nodes.begin(), fold_.nodes.end(), at.node);
      if (!simulated_node) {
        spec.reaches_mirrors = true;
        continue;
      }
      // Folded: only the members on the representative's node are part of its ring.
      if (fold_.folded && at.node != placement_.location(rank).node) {
        spec.reaches_mirrors = true;
        continue;
      }
      first.push_back({at.node, at.gpu});
    }
    spec.rings.push_back(first);
    if (fold_.folded) {
      // The identical rings of the representative's copies on its node.
      const ExplicitRank& e = fold_.ranks[static_cast<std::size_t>(explicit_of_rank_.at(rank))];
      for (int c : e.copy_gpus) {
        const int copy_rank = e.location.node * placement_.gpus_per_node() + c;
        std::vector<RingLocation> ring;
        for (int m : placement_.group(copy_rank, kind)) {
          const GpuLocation at = placement_.location(m);
          if (at.node == e.location.node) ring.push_back({at.node, at.gpu});
        }
        if (std::find(spec.rings.begin(), spec.rings.end(), ring) == spec.rings.end()) spec.rings.push_back(ring);
      }
    }
    return spec;
  }

  int ring_id(const RingSpec& spec) {
    for (std::size_t i = 0; i < out_.platform.rings.size(); ++i) {
      if (out_.platform.rings[i] == spec) return static_cast<int>(i);
    }
    out_.platform.rings.push_back(spec);
    return static_cast<int>(out_.platform.rings.size()) - 1;
  }

  // What the interpreter needs of a rank's group of a kind, computed once.
  struct GroupInfo {
    int first = 0;     // identifies the group instance
    int size = 0;
    int nodes = 0;     // nodes the whole group spans
    int ring = -1;     // its platform ring
    std::optional<NcclComm> nccl;  // NCCL's view of it, where the profile names its NCCL
  };

  const GroupInfo& group_info(int rank, GroupKind kind) {
    const auto key = std::make_pair(rank, static_cast<int>(kind));
    const auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    const std::vector<int> members = placement_.group(rank, kind);
    GroupInfo info;
    info.first = members.front();
    info.size = static_cast<int>(members.size());
    std::vector<int> nodes;
    for (int m : members) nodes.push_back(placement_.location(m).node);
    std::sort(nodes.begin(), nodes.end());
    info.nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    info.ring = ring_id(ring_of(rank, kind));
    info.nccl = nccl_comm(profile_, PcieTopology(profile_), placement_, members);
    return groups_.emplace(key, info).first->second;
  }

  OpId lower_collective(const Instruction& in, int g, int position, const std::vector<OpId>& deps) {
    const int rank = fold_.ranks[static_cast<std::size_t>(g)].rank;
    const GroupInfo& group = group_info(rank, in.group);
    // The group instance, identified by its first member; the collective by its tag or position.
    const auto key = std::make_tuple(static_cast<int>(in.group), group.first, in.tag >= 0 ? in.tag : -1 - position);
    auto it = collectives_.find(key);
    if (it != collectives_.end()) {
      // Another simulated member already created it: join.
      const OpId id = it->second;
      Op& op = builder_.graph()[id];
      op.participants.push_back(g);
      Op scratch;
      effects(in, g, scratch);
      op.memory.insert(op.memory.end(), scratch.memory.begin(), scratch.memory.end());
      for (OpId d : deps) {
        if (d != GraphBuilder::NONE) boost::add_edge(d, id, builder_.graph());
      }
      builder_.chain_existing(id, g, in.stream);
      return id;
    }
    Op op = base(in, OpKind::COLLECTIVE, g);
    op.gpu = -1;
    op.participants = {g};
    op.collective = in.collective;
    op.bytes = in.bytes;
    op.group_size = group.size;
    const CollectiveTiming timing = collective_timing(profile_, in.collective, in.bytes, op.group_size, group.nodes, group.nccl);
    op.latency_s = timing.latency_s;
    op.ring = group.ring;
    const OpId id = add(std::move(op), deps);
    if (timing.hop_cap_Bps > 0) {
      // NCCL's bandwidth for the protocol it runs, beside a calibrated curve's: the slower holds.
      caps_.resize(std::max(caps_.size(), static_cast<std::size_t>(id) + 1), 0.0);
      caps_[id] = caps_[id] > 0 ? std::min(caps_[id], timing.hop_cap_Bps) : timing.hop_cap_Bps;
    }
    collectives_[key] = id;
    return id;
  }

  // The simulated GPU that runs pipeline stage `stage` for the same tensor and data index as g.
  int peer_of(int g, int stage) const {
    const ExplicitRank& e = fold_.ranks[static_cast<std::size_t>(g)];
    const int peer = placement_.rank_of({e.coord.tp, e.coord.dp, stage});
    const auto it = explicit_of_rank_.find(peer);
    if (it == explicit_of_rank_.end()) throw std::logic_error("interpreter: the peer stage is not simulated");
    return it->second;
  }

  int transfer_id(int src, int dst) {
    const TransferSpec spec{src, dst};
    for (std::size_t i = 0; i < out_.platform.transfers.size(); ++i) {
      if (out_.platform.transfers[i] == spec) return static_cast<int>(i);
    }
    out_.platform.transfers.push_back(spec);
    return static_cast<int>(out_.platform.transfers.size()) - 1;
  }

  OpId lower_send(const Instruction& in, int g, const std::vector<OpId>& deps) {
    const int dst = peer_of(g, in.peer_stage);
    Op op = base(in, OpKind::TRANSFER, g);
    op.peer = dst;
    op.bytes = in.bytes;
    op.transfer = transfer_id(g, dst);
    const OpId id = add(std::move(op), deps);
    const auto key = std::make_tuple(g, dst, in.tag);
    if (!sends_.emplace(key, id).second) {
      throw std::logic_error(fmt::format("interpreter: two sends with tag {} between the same ranks", in.tag));
    }
    return id;
  }

  OpId lower_recv(const Instruction& in, int g, const std::vector<OpId>& deps) {
    const int src = peer_of(g, in.peer_stage);
    const auto key = std::make_tuple(src, g, in.tag);
    // A zero-work op: it ends when the data has arrived (and the receiver has reached it).
    Op op = base(in, OpKind::DELAY, g);
    std::vector<OpId> waits = deps;
    const auto it = sends_.find(key);
    if (it != sends_.end()) waits.push_back(it->second);
    const OpId id = add(std::move(op), waits);
    if (it == sends_.end()) pending_recvs_[key].push_back(id);
    return id;
  }

  const ProgramSet& programs_;
  const Placement& placement_;
  const FoldPlan& fold_;
  const CostModel& costs_;
  const hw::ClusterProfile& profile_;
  GraphBuilder builder_;
  LoweredPrograms out_;
  std::vector<double> caps_;
  std::vector<std::vector<OpId>> done_;
  std::map<int, int> explicit_of_rank_;
  std::map<int, int> host_step_;     // simulated GPU -> step + 1 of its last host op
  std::map<int, OpId> last_host_;    // simulated GPU -> its last host op
  std::map<std::tuple<int, int, int, int, int>, int> actions_;  // (GPU, step, micro-batch, chunk, pass) -> Op::action
  std::tuple<int, int, int, int, int> last_action_key_;
  int last_action_ = -1;
  std::map<std::pair<int, int>, GroupInfo> groups_;  // (rank, group kind)
  std::map<std::tuple<int, int, std::int64_t>, OpId> collectives_;
  std::map<std::tuple<int, int, std::int64_t>, OpId> sends_;
  std::map<std::tuple<int, int, std::int64_t>, std::vector<OpId>> pending_recvs_;
};

}  // namespace

LoweredPrograms interpret(const ProgramSet& programs, const Placement& placement, const FoldPlan& fold,
                          const CostModel& costs, const hw::ClusterProfile& profile) {
  return Interpreter(programs, placement, fold, costs, profile).run();
}

}  // namespace trainsim::sim
