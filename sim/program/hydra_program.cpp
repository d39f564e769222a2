#include "hydra_program.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "activation_memory.hpp"
#include "pipeline_schedule.hpp"
#include "unit_costs.hpp"
#include "unit_work.hpp"

namespace trainsim::sim {
namespace {

class HydraBuilder {
 public:
  HydraBuilder(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs)
      : m_(m), s_(s), costs_(costs), units_(unit_costs(m, s, costs, false)), writer_(program_) {
    bytes_ = wl::state_bytes(m.numerics);
    acts_ = activation_sizes(m, s);
    boundary_bytes_ = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) * static_cast<double>(m.hidden) *
                      wl::activation_element_bytes(m.numerics);
    // Shard k holds layers [k L / N, (k + 1) L / N): sizes differ by at most one layer; the first
    // shard also holds the embedding, the last the head and the loss.
    const int L = static_cast<int>(m.layers), N = s.shards;
    for (int k = 0; k < N; ++k) {
      std::vector<int> us;
      if (k == 0) us.push_back(0);
      for (int l = k * L / N; l < (k + 1) * L / N; ++l) us.push_back(l + 1);
      if (k == N - 1) us.push_back(L + 1);
      double params = 0;
      for (int u : us) params += units_[static_cast<std::size_t>(u)].params;
      shards_.push_back({us, params});
    }
  }

  ProgramSet build(const PipelineSchedule& schedule, int steps) {
    program_.step_ends.assign(static_cast<std::size_t>(steps), {});
    allocate_model_states();
    const StageSchedule& order = schedule.front();
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Work& w = order[i];
      // A shard that is demoted and promoted again at once stays on the GPU (Hydra keeps a shard
      // resident when its task comes next on that device): shard 0 between micro-batches.
      const bool stays = w.kind == WorkKind::DEMOTE && i + 1 < order.size() && order[i + 1].kind == WorkKind::PROMOTE &&
                         order[i + 1].chunk == w.chunk;
      if (stays) {
        ++i;
        continue;
      }
      switch (w.kind) {
        case WorkKind::PROMOTE: promote(w); break;
        case WorkKind::FORWARD: forward(w); break;
        case WorkKind::BACKWARD: backward(w); break;
        case WorkKind::OPTIMIZER_STEP: optimizer_step(w); break;
        case WorkKind::DEMOTE: demote(w); break;
      }
    }
    ProgramSet out;
    out.steps = steps;
    out.stages.push_back(std::move(program_));
    out.notes.push_back(fmt::format("Hydra: {} shards of about {} layers, double-buffered", s_.shards,
                                    (m_.layers + s_.shards - 1) / s_.shards));
    return out;
  }

 private:
  struct Shard {
    std::vector<int> units;
    double params = 0;
  };

  double state_bytes_per_param() const { return bytes_.params + bytes_.grads + bytes_.optimizer; }

  void allocate_model_states() {
    Instruction in;
    in.kind = InstrKind::MEMORY;
    in.name = "model_states";
    in.stream = Stream::COMPUTE;
    double params = 0;
    for (const auto& sh : shards_) params += sh.params;
    in.memory = {{Tier::HOST, MemClass::PARAMS, params * bytes_.params, false},
                 {Tier::HOST, MemClass::GRADS, params * bytes_.grads, false},
                 {Tier::HOST, MemClass::OPTIMIZER, params * bytes_.optimizer, false}};
    last_compute_ = writer_.add(std::move(in));
  }

  Instruction copy(Tier from, Tier to, double bytes, const char* name, int step) const {
    Instruction in;
    in.kind = InstrKind::COPY;
    in.stream = to == Tier::GPU ? Stream::H2D : Stream::D2H;
    in.category = Category::OFFLOAD_IO;
    in.name = name;
    in.from = from;
    in.to = to;
    in.bytes = bytes;
    in.step = step;
    return in;
  }

  // A shard visits the GPU in one of two buffers: its promotion waits until the visit before the
  // previous one has been demoted (that buffer is free again).
  void promote(const Work& w) {
    // The shard's parameters, gradients and optimizer states come in together (16 bytes per
    // parameter in mixed precision); the state's owner on the host keeps its copy.
    const double bytes = shards_[static_cast<std::size_t>(w.chunk)].params * state_bytes_per_param();
    Instruction in = copy(Tier::HOST, Tier::GPU, bytes, "promote_shard", w.step);
    in.chunk = w.chunk;
    in.memory.push_back({Tier::GPU, MemClass::STAGING, bytes, false});
    if (demotes_.size() >= 2) in.after.push_back(demotes_[demotes_.size() - 2]);
    promoted_ = writer_.add(std::move(in));
  }

  void demote(const Work& w) {
    const double bytes = shards_[static_cast<std::size_t>(w.chunk)].params * state_bytes_per_param();
    Instruction in = copy(Tier::GPU, Tier::HOST, bytes, "demote_shard", w.step);
    in.chunk = w.chunk;
    in.memory.push_back({Tier::GPU, MemClass::STAGING, -bytes, true});
    in.after = {last_compute_};
    const int id = writer_.add(std::move(in));
    demotes_.push_back(id);
    if (w.step >= 0 && w.step < static_cast<int>(program_.step_ends.size())) program_.step_ends[static_cast<std::size_t>(w.step)] = {id};
  }

  // One unit's pass as a compute, with the activation memory it makes or frees.
  int compute(int u, ComputePass pass, int mb, int chunk, int step, std::vector<int> after, double alloc_at_end) {
    const UnitCost& uc = units_[static_cast<std::size_t>(u)];
    const Segments& segs = pass == ComputePass::BACKWARD ? uc.backward : uc.forward;
    Instruction in;
    in.kind = InstrKind::COMPUTE;
    in.stream = Stream::COMPUTE;
    in.category = Category::COMPUTE;
    in.name = pass == ComputePass::FORWARD ? "forward" : pass == ComputePass::BACKWARD ? "backward" : "recompute";
    in.pass = pass;
    in.layer = uc.layer;
    in.micro_batch = mb;
    in.chunk = chunk;
    in.step = step;
    for (const auto& seg : segs) {
      in.seconds += seg.seconds;
      in.flops += seg.flops;
      in.gemm_seconds += seg.gemm_seconds;
      in.attention_seconds += seg.attention_seconds;
      in.gap_seconds += seg.gap_seconds;
    }
    if (alloc_at_end != 0) in.memory.push_back({Tier::GPU, MemClass::ACTIVATIONS, alloc_at_end, true});
    in.after = std::move(after);
    return writer_.add(std::move(in));
  }

  // What a unit keeps from its forward to its backward when the shard's activations are alive.
  double kept(int u) const {
    const UnitCost& uc = units_[static_cast<std::size_t>(u)];
    if (uc.holds_embedding) return acts_.embedding;
    if (uc.holds_head) return acts_.output + acts_.logits;
    return acts_.full;
  }

  void forward(const Work& w) {
    const Shard& sh = shards_[static_cast<std::size_t>(w.chunk)];
    const bool last = w.chunk == s_.shards - 1;
    std::vector<int> after{promoted_};
    for (int u : sh.units) {
      // The last shard keeps its activations for the backward that follows at once; the others
      // keep nothing (the backward visit reruns them).
      last_compute_ = compute(u, ComputePass::FORWARD, w.micro_batch, w.chunk, w.step, after, last ? kept(u) : 0.0);
      after.clear();
    }
    if (!last) {
      // The shard's output (the next shard's input) goes to host memory for the backward visit.
      Instruction out = copy(Tier::GPU, Tier::HOST, boundary_bytes_, "shard_output_out", w.step);
      out.micro_batch = w.micro_batch;
      out.memory.push_back({Tier::HOST, MemClass::CHECKPOINTS, boundary_bytes_, false});
      out.after = {last_compute_};
      writer_.add(std::move(out));
    }
  }

  void backward(const Work& w) {
    const Shard& sh = shards_[static_cast<std::size_t>(w.chunk)];
    const bool last = w.chunk == s_.shards - 1;
    std::vector<int> after{promoted_};
    if (!last) {
      // The shard's input back from host memory, then its forward again, keeping everything.
      if (w.chunk > 0) {
        Instruction in = copy(Tier::HOST, Tier::GPU, boundary_bytes_, "shard_input_in", w.step);
        in.micro_batch = w.micro_batch;
        in.memory.push_back({Tier::HOST, MemClass::CHECKPOINTS, -boundary_bytes_, true});
        in.after = {promoted_};
        after = {writer_.add(std::move(in))};
      }
      for (int u : sh.units) {
        last_compute_ = compute(u, ComputePass::RECOMPUTE, w.micro_batch, w.chunk, w.step, after, kept(u));
        after.clear();
      }
    }
    for (auto it = sh.units.rbegin(); it != sh.units.rend(); ++it) {
      last_compute_ = compute(*it, ComputePass::BACKWARD, w.micro_batch, w.chunk, w.step, after, -kept(*it));
      after.clear();
    }
  }

  void optimizer_step(const Work& w) {
    const Shard& sh = shards_[static_cast<std::size_t>(w.chunk)];
    std::vector<int> after{last_compute_};
    if (s_.dp > 1) {
      Instruction r;
      r.kind = InstrKind::COLLECTIVE;
      r.stream = Stream::COMM;
      r.category = Category::COMMUNICATION;
      r.name = "dp_reduce_grads";
      r.collective = CollectiveKind::ALL_REDUCE;
      r.group = GroupKind::DATA;
      r.bytes = sh.params * bytes_.grads;
      r.step = w.step;
      r.after = after;
      after = {writer_.add(std::move(r))};
    }
    Instruction opt;
    opt.kind = InstrKind::COMPUTE;
    opt.stream = Stream::COMPUTE;
    opt.category = Category::OPTIMIZER;
    opt.pass = ComputePass::OPTIMIZER;
    opt.name = "adam";
    opt.chunk = w.chunk;
    opt.step = w.step;
    opt.seconds = costs_.gpu_adam_seconds(sh.params, m_.numerics);
    opt.after = after;
    last_compute_ = writer_.add(std::move(opt));
  }

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const CostModel& costs_;
  std::vector<UnitCost> units_;
  Program program_;
  ProgramWriter writer_;
  wl::StateBytes bytes_;
  ActivationSizes acts_;
  double boundary_bytes_ = 0;
  std::vector<Shard> shards_;
  std::vector<int> demotes_;
  int promoted_ = -1, last_compute_ = -1;
};

}  // namespace

ProgramSet build_hydra_program(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                               const wl::MemoryEstimate& /*memory*/, int micro_batches) {
  PipelineShape shape;
  shape.stages = 1;
  shape.chunks = s.shards;
  shape.micro_batches = micro_batches > 0 ? micro_batches : static_cast<int>(s.micro_batches());
  return HydraBuilder(m, s, costs).build(hydra_schedule(shape), 1);
}

}  // namespace trainsim::sim
