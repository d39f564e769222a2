#include "unit_work.hpp"

#include <array>

#include "activation_memory.hpp"
#include "reference_stack.hpp"
#include "stack_layer.hpp"

namespace trainsim::sim {

bool first_of_layer(const std::vector<UnitCost>& units, int u) {
  return u == 0 || units[static_cast<std::size_t>(u - 1)].layer != units[static_cast<std::size_t>(u)].layer;
}

namespace {

bool last_of_layer(const std::vector<UnitCost>& units, int u) {
  return u + 1 == static_cast<int>(units.size()) ||
         units[static_cast<std::size_t>(u + 1)].layer != units[static_cast<std::size_t>(u)].layer;
}

void alloc(std::vector<MemEffect>& out, MemClass cls, double bytes, bool at_end) {
  if (bytes != 0) out.push_back({Tier::GPU, cls, bytes, at_end});
}

// What a pass allocates when it starts and frees or keeps when it ends (the activation memory of
// Korthikanti et al.: stored activations, or a checkpoint under full recompute, kept from a
// layer's forward to its backward; what a recompute re-materializes lives until the backward).
void activation_effects(const UnitWork& w, int u, ComputePass pass, std::vector<MemEffect>& at_start,
                        std::vector<MemEffect>& at_end) {
  const auto& units = *w.units;
  const UnitCost& uc = units[static_cast<std::size_t>(u)];
  const bool full = w.recompute == wl::Recompute::FULL;
  const bool layer = uc.layer >= 0 && uc.layer < w.transformer_layers;
  const double stored = layer && !full ? w.activations.stored : 0.0;
  const double ckpt = layer && full ? w.activations.stored : 0.0;
  const double working = layer && w.recompute != wl::Recompute::NONE ? w.activations.full - w.activations.stored : 0.0;
  if (pass == ComputePass::FORWARD) {
    // Freed by the forward call's last unit (pipeline_program.cpp, data_parallel_lowering.cpp).
    if (layer && first_of_layer(units, u)) alloc(at_start, MemClass::ACTIVATIONS, w.activations.autocast_cache, false);
    if (last_of_layer(units, u)) {
      alloc(at_end, MemClass::ACTIVATIONS, stored, true);
      alloc(at_end, MemClass::CHECKPOINTS, ckpt, true);
    }
    if (uc.holds_embedding) alloc(at_end, MemClass::ACTIVATIONS, w.activations.embedding, true);
    if (uc.holds_head) {
      alloc(at_end, MemClass::ACTIVATIONS, w.activations.output, true);
      alloc(at_end, MemClass::LOGITS, w.activations.logits, true);
    }
  } else if (pass == ComputePass::RECOMPUTE) {
    if (w.recompute == wl::Recompute::SELECTIVE || first_of_layer(units, u)) alloc(at_start, MemClass::ACTIVATIONS, working, false);
  } else {
    if (first_of_layer(units, u)) {
      alloc(at_end, MemClass::ACTIVATIONS, -stored - working, true);
      alloc(at_end, MemClass::CHECKPOINTS, -ckpt, true);
    }
    if (uc.holds_embedding) alloc(at_end, MemClass::ACTIVATIONS, -w.activations.embedding, true);
    if (uc.holds_head) {
      alloc(at_start, MemClass::LOGITS, w.activations.logits_backward, false);
      alloc(at_end, MemClass::ACTIVATIONS, -w.activations.output, true);
      alloc(at_end, MemClass::LOGITS, -w.activations.logits - w.activations.logits_backward, true);
    }
  }
}

const char* name_of(ComputePass p) {
  switch (p) {
    case ComputePass::FORWARD: return "forward";
    case ComputePass::BACKWARD: return "backward";
    case ComputePass::RECOMPUTE: return "recompute";
    default: return "compute";
  }
}

}  // namespace

UnitWork unit_work(const wl::ModelSpec& m, const wl::Strategy& s, const std::vector<UnitCost>& units) {
  UnitWork work;
  work.units = &units;
  work.activations = activation_sizes(m, s);
  work.recompute = s.recompute;
  work.transformer_layers = static_cast<int>(m.layers);
  work.tp = s.tp;
  work.sp = s.sp && s.tp > 1;
  work.tp_bytes = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) * static_cast<double>(m.hidden) *
                  wl::activation_element_bytes(m.numerics);
  switch (m.numerics) {
    case wl::Numerics::BF16_MIXED:
    case wl::Numerics::BF16: work.dtype = Dtype::BF16; break;
    case wl::Numerics::FP32: work.dtype = Dtype::FP32; break;
    case wl::Numerics::FP16_MIXED: work.dtype = Dtype::FP16; break;
  }
  return work;
}

ActivationSizes activation_sizes(const wl::ModelSpec& m, const wl::Strategy& s) {
  const wl::ActivationShape shape{s.seq, s.micro_batch, s.tp, s.sp, s.recompute};
  const wl::LayerActivations acts = wl::layer_activation_bytes(m, shape);
  ActivationSizes a;
  a.stored = acts.stored;
  a.full = acts.full;
  a.embedding = wl::embedding_activation_bytes(m, shape);
  a.output = wl::output_norm_activation_bytes(m, shape);
  a.logits = wl::logits_bytes(m, shape);
  if (s.stack.is_pytorch()) {
    // What the stack's eager code saves (workloads/training_stacks.md); under activation
    // checkpointing a layer keeps its input until its backward recomputes the rest.
    a.full = wl::torch_layer_saved_bytes(m, s);
    a.stored = s.recompute == wl::Recompute::FULL ? wl::torch_layer_checkpoint_bytes(m, s) : a.full;
    a.autocast_cache = wl::torch_autocast_cache_bytes(m, s);
    const wl::TorchLossBytes loss = wl::torch_loss_bytes(m, s);
    a.logits = loss.kept;
    a.logits_backward = loss.backward_extra;
  }
  if (s.stack.is_reference()) {
    // The reference's arena (workloads/reference_stack.hpp): per-slot layer buffers here, the
    // head's logits among the resident buffers of the memory estimate.
    const wl::ReferenceActivations r = wl::reference_activations(m, s);
    a.stored = r.stored;
    a.full = r.full;
    a.embedding = r.embedding;
    a.output = r.output;
    a.logits = 0;
  }
  // DeepSpeed's partitioned checkpoints (wl::Strategy::partition_activations): the checkpoint a
  // rank keeps, saves and loads is 1/tp of it; the recompute re-materializes the gathered whole
  // with the rest (full - stored).
  if (s.partition_activations && s.recompute == wl::Recompute::FULL && s.tp > 1) a.stored /= s.tp;
  return a;
}

int emit_unit_pass(ProgramWriter& w, const UnitWork& work, int unit, const PassLabel& label,
                   const Deps& first_after, const MemEffects& end_effects) {
  const UnitCost& uc = (*work.units)[static_cast<std::size_t>(unit)];
  const Segments& segments = label.pass == ComputePass::FORWARD      ? uc.forward
                             : label.pass == ComputePass::BACKWARD   ? uc.backward
                             : work.recompute == wl::Recompute::FULL ? uc.full_recompute
                                                                     : uc.selective_recompute;
  std::vector<MemEffect> at_start, at_end;
  activation_effects(work, unit, label.pass, at_start, at_end);
  at_end.insert(at_end.end(), end_effects.begin(), end_effects.end());
  auto labelled = [&](Instruction in) {
    in.pass = label.pass;
    in.layer = uc.layer;
    in.micro_batch = label.micro_batch;
    in.chunk = label.chunk;
    in.step = label.step;
    return in;
  };
  Deps after = first_after;
  int last = -1;
  for (std::size_t k = 0; k < segments.size(); ++k) {
    const Segment& seg = segments[k];
    Instruction c = labelled({});
    c.kind = InstrKind::COMPUTE;
    c.stream = Stream::COMPUTE;
    c.category = Category::COMPUTE;
    c.name = name_of(label.pass);
    c.seconds = seg.seconds;
    c.flops = seg.flops;
    c.gemm_seconds = seg.gemm_seconds;
    c.attention_seconds = seg.attention_seconds;
    c.gap_seconds = seg.gap_seconds;
    c.after = after;
    if (k == 0) c.memory = at_start;
    const bool last_segment = k + 1 == segments.size();
    const bool collective = seg.tp_allreduce_after && work.tp > 1;
    if (last_segment && !collective) c.memory.insert(c.memory.end(), at_end.begin(), at_end.end());
    last = w.add(std::move(c));
    after = {last};
    if (!collective) continue;
    // Synchronous on the compute stream, as Megatron-LM's tensor-parallel regions are.
    const std::array<CollectiveKind, 2> kinds = work.sp ? std::array{CollectiveKind::REDUCE_SCATTER, CollectiveKind::ALL_GATHER}
                                                        : std::array{CollectiveKind::ALL_REDUCE, CollectiveKind::ALL_REDUCE};
    const std::size_t collectives = work.sp ? 2 : 1;
    for (std::size_t i = 0; i < collectives; ++i) {
      Instruction col = labelled({});
      col.kind = InstrKind::COLLECTIVE;
      col.stream = Stream::COMPUTE;
      col.category = Category::COMMUNICATION;
      col.name = work.sp ? (i == 0 ? "sp_reduce_scatter" : "sp_all_gather") : "tp_allreduce";
      col.collective = kinds[i];
      col.group = GroupKind::TENSOR;
      col.dtype = work.dtype;
      col.bytes = work.tp_bytes;
      col.after = after;
      if (last_segment && i + 1 == collectives) col.memory = at_end;
      last = w.add(std::move(col));
      after = {last};
    }
  }
  if (segments.empty()) {
    // A pass with no work (a selective recompute of a unit without the attention core) still
    // marks its memory effects and its place in the order.
    Instruction m = labelled({});
    m.kind = InstrKind::MEMORY;
    m.stream = Stream::COMPUTE;
    m.name = name_of(label.pass);
    m.after = after;
    m.memory = at_start;
    m.memory.insert(m.memory.end(), at_end.begin(), at_end.end());
    last = w.add(std::move(m));
  }
  return last;
}

}  // namespace trainsim::sim
