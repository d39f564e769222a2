#include "stack_model.hpp"
#include "stack_modules.hpp"

namespace trainsim::wl {

const StackModel& stack_model(StackKind kind) {
  switch (kind) {
    case StackKind::IDEALIZED: return idealized_stack();
    case StackKind::MEGATRON: return megatron_stack();
    case StackKind::DEEPSPEED: return deepspeed_stack();
    case StackKind::DEEPSPEED_0_3: return deepspeed_v03_stack();
    case StackKind::PYTORCH: return pytorch_stack();
    case StackKind::PYTORCH_DDP: return pytorch_ddp_stack();
    case StackKind::PYTORCH_FSDP: return pytorch_fsdp_stack();
    case StackKind::PYTORCH_PIPELINING: return pytorch_pipelining_stack();
    case StackKind::TRAINSIM_REFERENCE: return trainsim_reference_stack();
  }
  return idealized_stack();
}

void refuse_l2l_hydra_and_delayed_update(const Strategy& s, const StackNeed& need) {
  need(!s.l2l && s.schedule != Schedule::HYDRA && !s.delayed_update, "no L2L, Hydra or delayed update", "one of them");
}

std::string dispatch_key_by_name(const Strategy& s) { return std::string(to_string(s.stack.kind)); }

StackActivations stack_activations(const ModelSpec& m, const Strategy& s) {
  const ActivationShape shape{s.seq, s.micro_batch, s.tp, s.sp, s.recompute};
  const LayerActivations layer = layer_activation_bytes(m, shape);
  StackActivations a;
  a.stored = layer.stored;
  a.full = layer.full;
  a.embedding = embedding_activation_bytes(m, shape);
  a.output = output_norm_activation_bytes(m, shape);
  a.logits_kept = logits_bytes(m, shape);
  if (const auto own = stack_model(s).activations) own(m, s, a);
  // DeepSpeed's partitioned checkpoints (Strategy::partition_activations): a rank keeps 1/tp of
  // each; the recompute's working set (full) holds the gathered whole.
  if (s.partition_activations && s.recompute == Recompute::FULL && s.tp > 1) a.stored /= s.tp;
  return a;
}

}  // namespace trainsim::wl
