#include "pipeline_program.hpp"

#include <set>

#include <fmt/format.h>

#include <map>

#include "activation_memory.hpp"
#include "model_params.hpp"
#include "pipeline_schedule.hpp"
#include "unit_work.hpp"

namespace trainsim::sim {
namespace {

enum Direction { ACTIVATION = 0, GRADIENT = 1 };

class StageBuilder {
 public:
  StageBuilder(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs, const wl::MemoryEstimate& memory,
               const wl::StagePartition& part, const UnitWork& work, int stage, int micro_batches)
      : m_(m), s_(s), costs_(costs), memory_(memory.stages[static_cast<std::size_t>(stage)]), part_(part),
        work_(work), stage_(stage), p_(s.pp), V_(part.virtual_stages()), micro_batches_(micro_batches),
        writer_(program_) {
    program_.stage = stage;
    stack_ = wl::stack_states(s.stack, m.numerics, s.zero_stage, micro_batches);
    param_bytes_ = memory_.params_on_rank * stack_.params;
    grad_bytes_ = memory_.params_on_rank * stack_.grads;
    // Activations between stages: micro-batch x sequence x hidden; tensor-parallel ranks each send
    // their 1/t slice and the receiver all-gathers it over NVLink (Narayanan et al. SC'21,
    // Sec. 4.1, scatter/gather), already split under sequence parallelism.
    // A PyTorch stage under autocast sends its fp32 residual stream (workloads/stacks/training_stacks.md).
    const double element = wl::stack_model(s).autocast && m.fp32_residual ? 4.0 : wl::activation_element_bytes(m.numerics);
    const double full = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) * static_cast<double>(m.hidden) * element;
    boundary_bytes_ = full;
    send_bytes_ = s.tp > 1 ? full / s.tp : full;
  }

  Program build(const StageSchedule& schedule, int steps) {
    program_.step_ends.assign(static_cast<std::size_t>(steps), {});
    allocate_model_states();
    for (const Work& work : schedule) {
      switch (work.kind) {
        case WorkKind::FORWARD: forward(work); break;
        case WorkKind::BACKWARD: backward(work); break;
        case WorkKind::OPTIMIZER_STEP: optimizer_step(work); break;
        case WorkKind::PROMOTE:
        case WorkKind::DEMOTE: throw std::logic_error("pipeline program: Hydra's work in a pipeline schedule");
      }
    }
    return std::move(program_);
  }

 private:
  // Model states are allocated by the program, before its first instruction (sim/README.md).
  void allocate_model_states() {
    Instruction in;
    in.kind = InstrKind::MEMORY;
    in.name = "model_states";
    in.stream = Stream::COMPUTE;
    auto add = [&](Tier t, MemClass c, double bytes) {
      if (bytes > 0) in.memory.push_back({t, c, bytes, false});
    };
    add(Tier::GPU, MemClass::PARAMS, memory_.params_at.gpu);
    // Gradients a stack frees at every step (set_to_none) appear with each unit's first backward.
    if (!stack_.grads_per_step) add(Tier::GPU, MemClass::GRADS, memory_.grads_at.gpu);
    add(Tier::GPU, MemClass::OPTIMIZER, memory_.optimizer_at.gpu);
    add(Tier::GPU, MemClass::BUCKETS, memory_.buffers.comm_bucket_bytes);
    // torch.distributed.pipelining's per-micro-batch receive buffers, kept across steps
    // (workloads/memory_model.cpp, activations()).
    add(Tier::GPU, MemClass::ACTIVATIONS, memory_.buffers.receive_buffer_bytes);
    add(Tier::HOST, MemClass::PARAMS, memory_.params_at.cpu);
    add(Tier::HOST, MemClass::GRADS, memory_.grads_at.cpu);
    add(Tier::HOST, MemClass::OPTIMIZER, memory_.optimizer_at.cpu);
    add(Tier::STORAGE, MemClass::PARAMS, memory_.params_at.nvme);
    add(Tier::STORAGE, MemClass::GRADS, memory_.grads_at.nvme);
    add(Tier::STORAGE, MemClass::OPTIMIZER, memory_.optimizer_at.nvme);
    last_ = writer_.add(std::move(in));
  }

  int virtual_stage(int chunk) const { return chunk * p_ + stage_; }
  std::int64_t tag(int mb, int vs, Direction d) const {
    return (static_cast<std::int64_t>(mb) * V_ + vs) * 2 + static_cast<std::int64_t>(d);
  }

  // Unit indices of a virtual stage (unit_costs: 0 embedding, 1 + l layer l, L + 1 head).
  std::vector<int> units_of(int vs) const {
    std::vector<int> out;
    if (vs == 0) out.push_back(0);
    const int first = part_.first_layer(vs);
    for (int l = first; l < first + part_.layer_count(vs); ++l) out.push_back(l + 1);
    if (vs == V_ - 1) out.push_back(static_cast<int>(m_.layers) + 1);
    return out;
  }

  int receive(int mb, int vs, int from_vs, Direction d) {
    Instruction r;
    r.kind = InstrKind::RECV;
    r.stream = Stream::NODE;
    r.category = Category::COMMUNICATION;
    r.name = d == ACTIVATION ? "recv_activation" : "recv_gradient";
    r.peer_stage = from_vs % p_;
    r.bytes = send_bytes_;
    r.dtype = work_.dtype;
    r.tag = tag(mb, vs, d);
    r.micro_batch = mb;
    int last = writer_.add(std::move(r));
    if (s_.tp > 1 && !s_.sp) {
      // Scatter/gather: the received slices are all-gathered inside the node.
      Instruction ag;
      ag.kind = InstrKind::COLLECTIVE;
      ag.stream = Stream::COMPUTE;
      ag.category = Category::COMMUNICATION;
      ag.name = "pp_all_gather";
      ag.collective = CollectiveKind::ALL_GATHER;
      ag.group = GroupKind::TENSOR;
      ag.dtype = work_.dtype;
      ag.bytes = boundary_bytes_;
      ag.micro_batch = mb;
      ag.after = {last};
      last = writer_.add(std::move(ag));
    }
    return last;
  }

  void send(int mb, int to_vs, Direction d, int after) {
    Instruction x;
    x.kind = InstrKind::SEND;
    x.stream = Stream::NODE;
    x.category = Category::COMMUNICATION;
    x.name = d == ACTIVATION ? "send_activation" : "send_gradient";
    x.peer_stage = to_vs % p_;
    x.bytes = send_bytes_;
    x.dtype = work_.dtype;
    x.tag = tag(mb, to_vs, d);
    x.micro_batch = mb;
    x.after = {after};
    writer_.add(std::move(x));
  }

  void forward(const Work& work) {
    const int vs = virtual_stage(work.chunk);
    std::vector<int> first_after;
    if (vs > 0) first_after = {receive(work.micro_batch, vs, vs - 1, ACTIVATION)};
    int last = -1;
    const std::vector<int> units = units_of(vs);
    // Autocast's cached weight casts (unit_work.hpp) go when the stage's forward call returns.
    double cached = 0;
    for (int u : units) {
      const int layer = (*work_.units)[static_cast<std::size_t>(u)].layer;
      if (layer >= 0 && layer < static_cast<int>(m_.layers)) cached += work_.activations.autocast_cache;
    }
    for (std::size_t i = 0; i < units.size(); ++i) {
      std::vector<MemEffect> end;
      if (i + 1 == units.size() && cached > 0) end.push_back({Tier::GPU, MemClass::ACTIVATIONS, -cached, true});
      last = emit_unit_pass(writer_, work_, units[i], {ComputePass::FORWARD, work.micro_batch, work.chunk, work.step}, first_after, end);
      first_after.clear();
    }
    last_ = last;
    ++in_flight_[work.weight_version];
    if (vs < V_ - 1) send(work.micro_batch, vs + 1, ACTIVATION, last);
  }

  void backward(const Work& work) {
    const int vs = virtual_stage(work.chunk);
    std::vector<int> first_after;
    if (vs < V_ - 1) first_after = {receive(work.micro_batch, vs, vs + 1, GRADIENT)};
    const std::vector<int> units = units_of(vs);
    const bool last_use = --in_flight_[work.weight_version] == 0 && work.weight_version < version_;
    int last = -1;
    for (auto it = units.rbegin(); it != units.rend(); ++it) {
      const int u = *it;
      const UnitCost& uc = (*work_.units)[static_cast<std::size_t>(u)];
      const bool layer = uc.layer >= 0 && uc.layer < static_cast<int>(m_.layers);
      const PassLabel label{ComputePass::BACKWARD, work.micro_batch, work.chunk, work.step};
      if (layer && s_.recompute != wl::Recompute::NONE) {
        emit_unit_pass(writer_, work_, u, {ComputePass::RECOMPUTE, work.micro_batch, work.chunk, work.step}, first_after);
        first_after.clear();
      }
      // A stashed weight version no micro-batch needs any more is freed (PipeDream, 2BW).
      std::vector<MemEffect> end;
      if (last_use && it + 1 == units.rend()) end.push_back({Tier::GPU, MemClass::PARAMS, -param_bytes_, true});
      if (stack_.grads_per_step && grads_made_.insert(u).second) {
        end.push_back({Tier::GPU, MemClass::GRADS, uc.params * stack_.grads, true});
        grads_alive_ += uc.params * stack_.grads;
      }
      last = emit_unit_pass(writer_, work_, u, label, first_after, end);
      first_after.clear();
    }
    last_ = last;
    if (vs > 0) send(work.micro_batch, vs - 1, GRADIENT, last);
  }

  Instruction collective(CollectiveKind kind, GroupKind group, double bytes, const char* name, int after) const {
    Instruction c;
    c.kind = InstrKind::COLLECTIVE;
    c.stream = Stream::COMM;
    c.category = Category::COMMUNICATION;
    c.name = name;
    c.collective = kind;
    c.group = group;
    c.bytes = bytes;
    c.dtype = work_.dtype;
    c.after = {after};
    return c;
  }

  void optimizer_step(const Work& work) {
    std::vector<int> reduced{last_};
    ++optimizer_steps_;
    // The schedule steps each model chunk of the stage on its own (interleaved: v per step); each
    // step covers that chunk's share of the stage's parameters.
    const double share = chunk_share(work.chunk);
    const int vs = virtual_stage(work.chunk);
    // Data-parallel gradients after the flush (Megatron-LM's local DDP): an all-reduce, or with
    // the distributed optimizer (ZeRO-1) a reduce-scatter before and an all-gather after.
    if (s_.dp > 1) {
      const bool zero1 = s_.zero_stage >= 1;
      reduced.push_back(writer_.add(collective(zero1 ? CollectiveKind::REDUCE_SCATTER : CollectiveKind::ALL_REDUCE,
                                               GroupKind::DATA, grad_bytes_ * share, "dp_reduce_grads", last_)));
    }
    // The word embedding tied to the output layer lives on the first and last stage: their
    // gradients are all-reduced between the two (Megatron-LM, Narayanan et al. SC'21 Sec. 4).
    if (m_.tied_embeddings && p_ > 1 && (vs == 0 || vs == V_ - 1)) {
      Instruction e = collective(CollectiveKind::ALL_REDUCE, GroupKind::EMBEDDING,
                                 static_cast<double>(m_.vocab * m_.hidden) / s_.tp * stack_.wire_grad, "embedding_allreduce", last_);
      e.tag = optimizer_steps_;
      reduced.push_back(writer_.add(std::move(e)));
    }
    Instruction opt;
    opt.kind = InstrKind::COMPUTE;
    opt.stream = Stream::COMPUTE;
    opt.category = Category::OPTIMIZER;
    opt.pass = ComputePass::OPTIMIZER;
    opt.name = "adam";
    opt.step = work.step;
    const double params = (s_.zero_stage >= 1 ? memory_.params_on_rank / s_.dp : memory_.params_on_rank) * share;
    opt.seconds = costs_.gpu_optimizer_seconds(params, m_.numerics, stack_);
    opt.after = reduced;
    if (stack_.grads_per_step && grads_alive_ > 0) {
      opt.memory.push_back({Tier::GPU, MemClass::GRADS, -grads_alive_, true});
      grads_alive_ = 0;
      grads_made_.clear();
    }
    // A new weight version; the old one stays while micro-batches in flight still use it.
    if (in_flight_[version_] > 0) opt.memory.push_back({Tier::GPU, MemClass::PARAMS, param_bytes_ * share, true});
    ++version_;
    int end = writer_.add(std::move(opt));
    if (s_.dp > 1 && s_.zero_stage >= 1) {
      end = writer_.add(collective(CollectiveKind::ALL_GATHER, GroupKind::DATA, param_bytes_ * share, "dp_gather_params", end));
    }
    last_ = end;
    auto& ends = program_.step_ends;
    if (work.step >= 0 && work.step < static_cast<int>(ends.size())) ends[static_cast<std::size_t>(work.step)] = {end};
  }

  // The part of the stage's parameters in `chunk`: its layers, and the embedding or the head
  // where they live (Megatron layout, model_params.hpp).
  double chunk_share(int chunk) const {
    if (part_.chunks == 1) return 1.0;
    const wl::RankParams r = wl::rank_params(m_, s_.tp);
    auto params_of = [&](int vs) {
      double p = part_.layer_count(vs) * r.per_layer;
      if (vs == 0) p += r.embedding;
      if (vs == V_ - 1) p += r.head;
      return p;
    };
    double total = 0;
    for (int c = 0; c < part_.chunks; ++c) total += params_of(virtual_stage(c));
    return total > 0 ? params_of(virtual_stage(chunk)) / total : 1.0 / part_.chunks;
  }

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const CostModel& costs_;
  const wl::StageMemory& memory_;
  const wl::StagePartition& part_;
  const UnitWork& work_;
  int stage_, p_, V_, micro_batches_;
  Program program_;
  ProgramWriter writer_;
  double param_bytes_ = 0, grad_bytes_ = 0, boundary_bytes_ = 0, send_bytes_ = 0;
  wl::StackStates stack_;
  std::set<int> grads_made_;  // units whose gradients exist in this step
  double grads_alive_ = 0;
  int last_ = -1;
  int version_ = 0;
  std::int64_t optimizer_steps_ = 0;
  std::map<int, int> in_flight_;  // weight version -> forwards run whose backward has not
};

}  // namespace

PipelineBuild build_pipeline_programs(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                                      const wl::MemoryEstimate& memory, int micro_batches, TrailingStep trailing) {
  PipelineBuild out;
  out.partition = wl::partition_stages(m, s);
  const std::vector<UnitCost> units = unit_costs(m, s, costs, false);
  const UnitWork work = unit_work(m, s, units);

  const ScheduleEntry& entry = pipeline_schedule(s.schedule);
  const bool asynchronous = wl::schedule_facts(s.schedule).asynchronous;
  PipelineShape shape;
  shape.stages = s.pp;
  shape.micro_batches = micro_batches > 0 ? micro_batches : static_cast<int>(s.micro_batches());
  shape.chunks = s.vpp;
  shape.steps = program_steps(asynchronous, trailing, shape.micro_batches, s.pp);
  const PipelineSchedule schedule = entry.make(shape);
  out.programs.steps = shape.steps;
  out.programs.measured_steps = measured_steps(asynchronous, shape.micro_batches, s.pp);
  for (int stage = 0; stage < s.pp; ++stage) {
    StageBuilder b(m, s, costs, memory, out.partition, work, stage, shape.micro_batches);
    out.programs.stages.push_back(b.build(schedule[static_cast<std::size_t>(stage)], shape.steps));
  }
  out.programs.notes.push_back("pipeline: " + out.partition.describe());
  return out;
}

}  // namespace trainsim::sim
