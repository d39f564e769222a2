#include "unit_work.hpp"

#include <array>

#include "stack_model.hpp"

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
  // What the stack's code saves (stack_model.hpp): the papers' tensors, a PyTorch stack's eager
  // ones, the reference's arena slots (its head's logits among the memory estimate's resident buffers).
  const wl::StackActivations own = wl::stack_activations(m, s);
  ActivationSizes a;
  a.stored = own.stored;
  a.full = own.full;
  a.embedding = own.embedding;
  a.output = own.output;
  a.logits = own.logits_kept;
  a.autocast_cache = own.autocast_cache;
  a.logits_backward = own.logits_backward;
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
