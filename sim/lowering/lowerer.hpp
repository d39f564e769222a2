#pragma once
// The lowering's working state, shared by the files that lower a step's instructions
// (data_parallel_lowering.cpp: computes and the graph; step_lowering.cpp: one step's
// instructions; optimizer_lowering.cpp: the optimizer step and the parameter update).
// Internal to sim/lowering.

#include <cmath>
#include <functional>
#include <map>

#include "activation_memory.hpp"
#include "data_parallel_lowering.hpp"
#include "data_parallel_schedule.hpp"
#include "unit_costs.hpp"

namespace trainsim::sim::detail {

using wl::OffloadTarget;
using wl::Recompute;

class Lowerer {
 public:
  Lowerer(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c, const wl::MemoryEstimate& mem,
          int gpus_per_node)
      : m_(m), s_(s), c_(c), mem_(mem), topo_(node_topology(s, gpus_per_node)), b_(topo_.local_gpus) {
    bytes_ = wl::state_bytes(m.numerics);
    gather_ = s.zero_stage == 3 && s.dp > 1 && !s.l2l;
    units_ = unit_costs(m, s, c, s.zero_stage == 3 && !s.l2l);
    std::vector<double> grad_bytes;
    for (const auto& u : units_) grad_bytes.push_back(u.params * bytes_.grads);
    const double bucket = s.zero_stage == 0 || s.l2l ? s.buffers.ddp_bucket_bytes : s.buffers.reduce_bucket_elems * bytes_.grads;
    bucket_of_unit_ = assign_buckets(grad_bytes, bucket);
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const auto k = static_cast<std::size_t>(bucket_of_unit_[u]);
      if (bucket_bytes_.size() <= k) bucket_bytes_.resize(k + 1, 0.0);
      bucket_bytes_[k] += grad_bytes[u];
    }
    const wl::ActivationShape shape{s.seq, s.micro_batch, s.tp, s.sp, s.recompute};
    const wl::LayerActivations acts = wl::layer_activation_bytes(m, shape);
    stored_ = acts.stored;
    full_ = acts.full;
    embedding_act_ = wl::embedding_activation_bytes(m, shape);
    output_act_ = wl::output_norm_activation_bytes(m, shape);
    logits_ = wl::logits_bytes(m, shape);
    tp_bytes_ = static_cast<double>(s.micro_batch * s.seq * m.hidden) * wl::activation_element_bytes(m.numerics);
    rank_params_ = mem.stages[0].params_on_rank;
  }

  LoweredGraph run() {
    LoweredGraph out;
    out.steps = s_.delayed_update ? 3 : 1;
    const std::vector<Instruction> instrs = data_parallel_schedule(plan());
    for (int step = 0; step < out.steps; ++step) {
      // Without the delayed update a step starts from the parameters the previous step updated;
      // with it, from those of two steps before (Ren et al. 2021, Sec. 5.2).
      const int source = step - (s_.delayed_update ? 2 : 1);
      step_ = step;
      out.step_ends.push_back(lower_step(instrs, source >= 0 ? &out.step_ends[static_cast<std::size_t>(source)] : nullptr));
    }
    out.caps.per_op = std::move(caps_);
    out.caps.per_op.resize(boost::num_vertices(b_.graph()), 0.0);
    out.graph = b_.take();
    out.topology = topo_;
    const wl::StageMemory& st = mem_.stages[0];
    out.gpu_baseline_bytes.assign(static_cast<std::size_t>(topo_.local_gpus), st.params_at.gpu + st.grads_at.gpu +
                                                                                 st.optimizer_at.gpu + st.buffers.comm_bucket_bytes +
                                                                                 st.buffers.weight_stash_bytes);
    out.host_baseline_bytes =
        topo_.local_gpus * (st.params_at.cpu + st.grads_at.cpu + st.optimizer_at.cpu + st.buffers.pinned_host_bytes);
    out.storage_baseline_bytes = topo_.local_gpus * st.nvme_bytes();
    return out;
  }

 private:
  DataParallelPlan plan() const {
    DataParallelPlan plan;
    for (const auto& u : units_) plan.unit_layer.push_back(u.layer);
    plan.checkpointed_layers = static_cast<int>(m_.layers);
    plan.micro_batches = static_cast<int>(s_.micro_batches());
    plan.fetch_params = s_.l2l || s_.offload_params != OffloadTarget::NONE;
    // L2L keeps the layer in use and the next one (Pudipeddi et al. 2020); ZeRO-Infinity reads
    // one unit further ahead than it gathers.
    plan.fetch_ahead = s_.l2l ? 1 : 2;
    plan.gather_params = gather_;
    plan.recompute_full = s_.recompute == Recompute::FULL;
    plan.selective_unit_of_layer = s_.recompute == Recompute::SELECTIVE ? 0 : -1;
    plan.offload_checkpoints = s_.offload_activations == wl::ActivationOffload::CPU;
    plan.reduce_every_micro_batch = s_.zero_stage >= 2 && !s_.l2l;
    plan.offload_grads = s_.l2l || s_.offload_optimizer != OffloadTarget::NONE;
    plan.update_params = !s_.l2l && ((s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1) ||
                                     (s_.offload_optimizer != OffloadTarget::NONE && s_.offload_params == OffloadTarget::NONE));
    plan.bucket_of_unit = bucket_of_unit_;
    return plan;
  }

  double shard(double elems) const { return std::ceil(elems / s_.dp); }
  const UnitCost& unit(int u) const { return units_[static_cast<std::size_t>(u)]; }
  bool first_of_layer(int u) const { return u == 0 || unit(u - 1).layer != unit(u).layer; }
  bool last_of_layer(int u) const {
    return u + 1 == static_cast<int>(units_.size()) || unit(u + 1).layer != unit(u).layer;
  }
  bool transformer_layer(int layer) const { return layer >= 0 && layer < static_cast<int>(m_.layers); }

  Op base(OpKind kind, Category cat, Stream stream, int gpu, const char* name, const Instruction& in) const {
    Op op;
    op.kind = kind;
    op.category = cat;
    op.stream = stream;
    op.gpu = gpu;
    op.name = name;
    op.layer = in.layer;
    op.micro_batch = in.micro_batch;
    op.step = step_;
    return op;
  }

  Op collective(CollectiveKind kind, int ring, const std::vector<int>& members, int group, double bytes, const char* name,
                const Instruction& in) const {
    Op op = base(OpKind::COLLECTIVE, Category::COMMUNICATION, Stream::COMM, -1, name, in);
    op.participants = members;
    op.collective = kind;
    op.ring = ring;
    op.group_size = group;
    op.bytes = bytes;
    return op;
  }

  OpId add(Op op, const std::vector<OpId>& deps) {
    double cap = 0;
    if (op.kind == OpKind::COLLECTIVE) cap = c_.collective_cap(op.collective, op.group_size, op.bytes);
    if (op.kind == OpKind::COPY_H2D || op.kind == OpKind::COPY_D2H) cap = c_.copy_cap(op.kind, op.bytes);
    const OpId id = b_.add(std::move(op), deps);
    if (cap > 0) {
      caps_.resize(id + 1, 0.0);
      caps_[id] = cap;
    }
    return id;
  }

  static void alloc(Op& op, Device d, MemClass cls, double bytes, bool at_end = false) {
    if (bytes != 0) op.memory.push_back({d, cls, bytes, at_end});
  }

  // The layer-level activation events of a compute, for GPU g.
  void activation_events(const Instruction& in, int g, Op& first, Op& last) const {
    const Device d = Device::gpu(g);
    const int u = in.unit;
    const UnitCost& uc = unit(u);
    const bool full = s_.recompute == Recompute::FULL;
    const bool layer = transformer_layer(uc.layer);
    const double stored = layer && !full ? stored_ : 0.0;
    const double ckpt = layer && full ? stored_ : 0.0;
    const double working = layer && s_.recompute != Recompute::NONE ? full_ - stored_ : 0.0;
    if (in.kind == Instr::FORWARD) {
      if (last_of_layer(u)) {
        alloc(last, d, MemClass::ACTIVATIONS, stored, true);
        alloc(last, d, MemClass::CHECKPOINTS, ckpt, true);
      }
      if (uc.holds_embedding) alloc(last, d, MemClass::ACTIVATIONS, embedding_act_, true);
      if (uc.holds_head) {
        alloc(last, d, MemClass::ACTIVATIONS, output_act_, true);
        alloc(last, d, MemClass::LOGITS, logits_, true);
      }
    } else if (in.kind == Instr::RECOMPUTE) {
      // The recomputed tensors of the layer live until its backward is done.
      if (s_.recompute == Recompute::SELECTIVE || first_of_layer(u)) alloc(first, d, MemClass::ACTIVATIONS, working);
    } else {
      if (first_of_layer(u)) {
        alloc(last, d, MemClass::ACTIVATIONS, -stored - working, true);
        alloc(last, d, MemClass::CHECKPOINTS, -ckpt, true);
      }
      if (uc.holds_embedding) alloc(last, d, MemClass::ACTIVATIONS, -embedding_act_, true);
      if (uc.holds_head) {
        alloc(last, d, MemClass::ACTIVATIONS, -output_act_, true);
        alloc(last, d, MemClass::LOGITS, -logits_, true);
      }
    }
  }

  std::vector<OpId> lower_step(const std::vector<Instruction>& instrs, const std::vector<OpId>* barrier);
  void lower_compute(const Instruction& in, const std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out,
                     const std::vector<std::pair<MemClass, double>>& release);
  void lower_optimizer(const Instruction& in, std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out);
  void lower_update(const Instruction& in, const std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out);

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const CostModel& c_;
  const wl::MemoryEstimate& mem_;
  NodeTopology topo_;
  GraphBuilder b_;
  wl::StateBytes bytes_;
  bool gather_ = false;
  std::vector<UnitCost> units_;
  std::vector<int> bucket_of_unit_;
  std::vector<double> bucket_bytes_;
  double stored_ = 0, full_ = 0, embedding_act_ = 0, output_act_ = 0, logits_ = 0, tp_bytes_ = 0;
  double rank_params_ = 0;
  int step_ = 0;
  std::vector<double> caps_;
  std::vector<OpId> previous_optimizer_;
};

}  // namespace trainsim::sim::detail
