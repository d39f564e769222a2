// PyTorch eager on one GPU under torch.autocast (or in pure bf16 from a capture), and what the
// PyTorch wrappers (DDP, FSDP2, pipelining) share with it (training_stacks.md, "autocast").
#include <fmt/format.h>

#include "model_params.hpp"
#include "stack_layer.hpp"
#include "stack_modules.hpp"

namespace trainsim::wl {

void pytorch_states(const TrainingStack&, Numerics n, int, std::int64_t, StackStates& st) {
  // Autocast: fp32 parameters, fp32 .grad, fp32 Adam moments; a 16-bit cast of every weight
  // inside each forward, saved for that layer's backward (training_stacks.md, "autocast").
  // Pure bf16 (a capture's numerics, model.to(torch.bfloat16)): bf16 parameters and .grad, and
  // Adam moments in the parameter's dtype (torch/optim/adamw.py: exp_avg and exp_avg_sq are
  // zeros_like(param)), no master copy, no casts.
  const bool mixed = n == Numerics::BF16_MIXED || n == Numerics::FP16_MIXED;
  const double state = n == Numerics::BF16 ? 2 : 4;
  st.params = state;
  st.grads = state;
  st.optimizer = 2 * state;
  st.wire_grad = state;
  st.grads_per_step = true;
  st.compute_copy = mixed ? 2 : 0;
  st.row = n == Numerics::BF16 ? "pure bf16" : "autocast";
}

void pytorch_refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  const bool raw = !m.has_architecture();
  need(s.tp == 1, "tp = 1 (no tensor parallelism in plain PyTorch)", fmt::format("tp {}", s.tp));
  need(!s.l2l && s.schedule != Schedule::HYDRA, "no L2L or Hydra", "one of them");
  // torch.utils.checkpoint around each layer is full recompute; selective recompute is Megatron's.
  need(s.recompute != Recompute::SELECTIVE, "recompute none or full (PyTorch checkpoints whole layers)",
       std::string(to_string(s.recompute)));
  // A capture records what the user's code runs (pure bf16, say); trainsim's own layer is autocast's.
  const bool captured = m.capture_numerics && *m.capture_numerics == m.numerics;
  need(!raw && (m.numerics == Numerics::BF16_MIXED || captured),
       "a model architecture trained in bf16-mixed (or as its --capture recorded)",
       raw ? std::string("--params") : std::string(to_string(m.numerics)));
  need(!s.delayed_update, "no delayed parameter update (torch.optim steps after the backward)", "delayed update");
  // torch.utils.checkpoint keeps each layer's input on the GPU; moving checkpoints to the host is
  // not a wrapper's option (torch.autograd.graph.save_on_cpu moves every saved tensor instead).
  need(s.offload_activations == ActivationOffload::NONE, "checkpoints kept on the GPU (no wrapper offloads them)",
       "offload_activations cpu");
}

void pytorch_buffers(const ModelSpec& m, const Strategy& s, const StageMemory& st, BufferMemory& buf) {
  // PyTorch's own buffers (training_stacks.md): DDP's buckets beside .grad, no ZeRO buckets or
  // staging (the replay allocates and frees them as PyTorch does).
  const StackStates ss = stack_states(s.stack, m.numerics, s.zero_stage, s.micro_batches());
  buf.comm_bucket_bytes = ss.bucket_copy * st.params_on_rank;
  buf.gathered_params_bytes = 0;
  buf.staging_bytes = 0;
}

namespace {

// What the stack's eager code saves (training_stacks.md); under activation checkpointing a layer
// keeps its input until its backward recomputes the rest.
void activations(const ModelSpec& m, const Strategy& s, StackActivations& a) {
  a.full = torch_layer_saved_bytes(m, s);
  a.stored = s.recompute == Recompute::FULL ? torch_layer_checkpoint_bytes(m, s) : a.full;
  a.autocast_cache = torch_autocast_cache_bytes(m, s);
  const TorchLossBytes loss = torch_loss_bytes(m, s);
  a.logits_kept = loss.kept;
  a.logits_backward = loss.backward_extra;
}

void single_gpu_refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  pytorch_refusals(s, m, need);
  need(s.gpus == 1 && s.dp == 1 && s.pp == 1, "one GPU (dp = pp = 1)", fmt::format("{} GPUs", s.gpus));
  need(s.zero_stage == 0, "ZeRO stage 0", fmt::format("stage {}", s.zero_stage));
}


// The PyTorch wrapper a candidate's shape needs: pipelining for a pipeline, FSDP2 for ZeRO-2/3,
// DDP for plain data parallelism, none on one GPU.
StackKind wrapper_for(const Strategy& s) {
  if (s.pp > 1) return StackKind::PYTORCH_PIPELINING;
  if (s.zero_stage >= 2) return StackKind::PYTORCH_FSDP;
  if (s.dp > 1 || s.zero_stage == 1) return StackKind::PYTORCH_DDP;
  return StackKind::PYTORCH;
}

}  // namespace

StackModel pytorch_eager_model(StackKind kind) {
  StackModel m;
  m.kind = kind;
  m.pytorch_eager = true;
  m.autocast = true;
  m.caching_allocator = true;
  m.torch_cpu_adam = true;
  m.bf16_mixed_only = true;
  m.gpu_optimizer = GpuOptimizer::TORCH_FUSED_ADAMW;
  m.states = pytorch_states;
  m.refusals = pytorch_refusals;
  m.layer_cost = torch_layer_cost;
  m.output_cost = torch_output_cost;
  m.embedding_cost = torch_embedding_cost;
  m.recompute_cost = torch_recompute_cost;
  m.activations = activations;
  m.buffers = pytorch_buffers;
  return m;
}

const StackModel& pytorch_stack() {
  static const StackModel model = [] {
    StackModel m = pytorch_eager_model(StackKind::PYTORCH);
    m.refusals = single_gpu_refusals;
    m.dispatch_key = dispatch_key_by_name;
    m.wrapper_for = wrapper_for;
    return m;
  }();
  return model;
}

}  // namespace trainsim::wl
