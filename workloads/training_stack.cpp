#include "training_stack.hpp"

#include "memory_model.hpp"

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
  const StateBytes seed = state_bytes(n);
  const bool mixed = n == Numerics::BF16_MIXED || n == Numerics::FP16_MIXED;
  switch (s.kind) {
    case StackKind::IDEALIZED:
      // ZeRO Sec. 3.1: 2 + 2 + K bytes; gradients travel in the 16-bit dtype.
      st.params = seed.params;
      st.grads = seed.grads;
      st.optimizer = seed.optimizer;
      st.wire_grad = seed.grads;
      st.row = "idealized";
      break;
    case StackKind::PYTORCH:
    case StackKind::PYTORCH_PIPELINING:
    case StackKind::PYTORCH_DDP:
      // Autocast: fp32 parameters, fp32 .grad, fp32 Adam moments; a 16-bit cast of every weight
      // inside each forward, saved for that layer's backward (training_stacks.md, "autocast").
      // Pure bf16 (a capture's numerics, model.to(torch.bfloat16)): bf16 parameters and .grad, and
      // Adam moments in the parameter's dtype (torch/optim/adamw.py: exp_avg and exp_avg_sq are
      // zeros_like(param)), no master copy, no casts.
      {
        const double state = n == Numerics::BF16 ? 2 : 4;
        st.params = state;
        st.grads = state;
        st.optimizer = 2 * state;
        st.wire_grad = state;
      }
      st.grads_per_step = true;
      st.compute_copy = mixed ? 2 : 0;
      st.row = n == Numerics::BF16 ? "pure bf16" : "autocast";
      if (s.kind == StackKind::PYTORCH_DDP) {
        // DDP's flat buckets (one copy of every gradient, in its dtype) always exist; .grad are views
        // into them only with gradient_as_bucket_view and only for gradients made while the reducer
        // runs: under no_sync (gradient accumulation) .grad is a tensor of its own (training_stacks.md, "DDP").
        st.bucket_copy = s.gradient_as_bucket_view && grad_accum <= 1 ? 0 : st.grads;
        st.scales_grads_into_buckets = true;
        st.row = "DDP";
      }
      break;
    case StackKind::PYTORCH_FSDP:
      // FSDP2: fp32 sharded parameters, gradients and Adam moments on every rank whatever
      // reshard_after_forward says (it decides only when the gathered 16-bit copy is freed);
      // gradients reduced in reduce_dtype (training_stacks.md, "FSDP2").
      st.params = 4;
      st.grads = 4;
      st.optimizer = 8;
      st.grads_per_step = true;
      st.wire_grad = dtype_bytes(s.reduce_dtype);
      st.shard_params = st.shard_grads = st.shard_optimizer = true;
      st.blocking_pageable_grad_offload = true;  // CPUOffloadPolicy (training_stacks.md, "FSDP2")
      st.whole_unit_collectives = true;          // fully_shard per block, one reduce-scatter per block
      st.gather_serves_recompute = true;         // a checkpointed block recomputes inside its backward's unshard
      st.row = "FSDP2";
      break;
    case StackKind::MEGATRON:
      // 16-bit parameters the GEMMs read directly, a persistent fp32 main-gradient buffer that
      // accumulates and is reduced in fp32, fp32 master weights and Adam moments (sharded by the
      // distributed optimizer, zero_stage 1) (training_stacks.md, "Megatron-LM").
      st.params = seed.params;
      st.grads = mixed ? 4 : seed.grads;
      st.optimizer = seed.optimizer;
      st.wire_grad = mixed ? 4 : seed.grads;
      st.shard_grads = false;
      st.row = "Megatron-LM";
      break;
    case StackKind::DEEPSPEED:
      // 16-bit parameters; the optimizer's fp32 gradient partition (accumulated there) and fp32
      // master weights and moments, partitioned by stage; gradients reduced in the 16-bit dtype
      // (training_stacks.md, "DeepSpeed").
      st.params = seed.params;
      st.grads = mixed ? 4 : seed.grads;
      st.optimizer = seed.optimizer;
      st.wire_grad = seed.grads;
      st.param_coordinator = true;
      st.row = "DeepSpeed";
      break;
    case StackKind::TRAINSIM_REFERENCE:
      // bf16 parameters the GEMMs read (with one rank and on pipeline stages; under ZeRO-3 each
      // unit's shard is cast from the fp32 master per gather and not kept), fp32 gradients that
      // accumulate over micro-batches and are reduce-scattered in fp32, fp32 master weights and
      // Adam moments (training_stacks.md, "trainsim-reference").
      st.params = 2;
      st.grads = 4;
      st.optimizer = 12;
      st.wire_grad = 4;
      st.keeps_param_shard = zero_stage < 3;
      // Its storage tier (calibrate/reference/storage_states.cpp, StorageStates::adam_step): chunks
      // of 4 Mi parameters (STATE_CHUNK_PARAMS, calibrate/reference/storage_states.hpp), two host
      // buffers, read c + 1 / CPU-Adam c / write c, both transfers waited for before chunk c + 1;
      // each transfer is a whole chunk (issue(): chunk_bytes(), the last chunk's too).
      st.storage_chunk_elems = 4.0 * 1024 * 1024;
      st.storage_lockstep = true;
      st.storage_whole_chunks = true;
      // Its ZeRO-3 schedule (calibrate/cuda/ref_param_store.cpp): whole layers gathered and
      // reduce-scattered one by one, a layer gathered once for its recompute and backward, host
      // copies of shards on the collective stream, each scattered shard added into a GPU gradient
      // shard (grads_done) that goes to the host after the last micro-batch, fp32 gradients kept
      // in pinned host memory beside storage (calibrate/reference/storage_states.cpp), and
      // whole-layer units whose head holds no tied embedding (unit_costs.cpp).
      st.whole_unit_collectives = true;
      st.gather_serves_recompute = true;
      st.shard_copies_on_collective_stream = true;
      st.accumulates_grad_shard_on_gpu = true;
      st.grads_stay_on_host = true;
      st.head_gathers_tied_embedding = false;
      st.row = "trainsim-reference";
      break;
  }
  return st;
}

}  // namespace trainsim::wl
