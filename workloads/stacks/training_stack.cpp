#include "training_stack.hpp"

#include "stack_model.hpp"

namespace trainsim::wl {

std::string_view to_string(StackKind k) {
  switch (k) {
    case StackKind::IDEALIZED: return "idealized";
    case StackKind::MEGATRON: return "megatron";
    case StackKind::DEEPSPEED: return "deepspeed";
    case StackKind::PYTORCH: return "pytorch";
    case StackKind::PYTORCH_DDP: return "pytorch-ddp";
    case StackKind::PYTORCH_FSDP: return "pytorch-fsdp";
    case StackKind::PYTORCH_PIPELINING: return "pytorch-pipelining";
    case StackKind::TRAINSIM_REFERENCE: return "trainsim-reference";
  }
  return "?";
}

std::string_view to_string(TensorDtype d) {
  switch (d) {
    case TensorDtype::BF16: return "bf16";
    case TensorDtype::FP16: return "fp16";
    case TensorDtype::FP32: return "fp32";
  }
  return "?";
}

double dtype_bytes(TensorDtype d) { return d == TensorDtype::FP32 ? 4.0 : 2.0; }

StackStates stack_states(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum) {
  StackStates st;
  st.shard_params = zero_stage >= 3;
  st.shard_grads = zero_stage >= 2;
  st.shard_optimizer = zero_stage >= 1;
  stack_model(s.kind).states(s, n, zero_stage, grad_accum, st);
  return st;
}

}  // namespace trainsim::wl
