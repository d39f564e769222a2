// FSDP2 (fully_shard) with a MixedPrecisionPolicy (training_stacks.md, "FSDP2").
#include <fmt/format.h>

#include "model_params.hpp"
#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void states(const TrainingStack& s, Numerics, int, std::int64_t, StackStates& st) {
  // fp32 sharded parameters, gradients and Adam moments on every rank whatever
  // reshard_after_forward says (it decides only when the gathered 16-bit copy is freed);
  // gradients reduced in reduce_dtype.
  st.params = 4;
  st.grads = 4;
  st.optimizer = 8;
  st.grads_per_step = true;
  st.wire_grad = dtype_bytes(s.reduce_dtype);
  st.shard_params = st.shard_grads = st.shard_optimizer = true;
  st.blocking_pageable_grad_offload = true;  // CPUOffloadPolicy
  st.whole_unit_collectives = true;          // fully_shard per block, one reduce-scatter per block
  st.gather_serves_recompute = true;         // a checkpointed block recomputes inside its backward's unshard
  // The measured scripts apply fully_shard to each block, then to the model, passing the run's
  // reshard_after_forward to both (reports/validation/scripts/run_step_stacks.py, build_dp): the
  // model's own state is the root and holds what no block holds. FSDP2 overrides the root's
  // setting to False only where the caller left it unset (torch/distributed/fsdp/_fully_shard/
  // _fsdp_state.py, FSDPState._lazy_init, _auto_reshard_after_forward; PyTorch 2.11), so with
  // True (ZeRO-3) the root reshards after the forward and its pre-backward gathers it again.
  st.root_gathers_ends_as_one = true;
  st.row = "FSDP2";
}

void refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  pytorch_refusals(s, m, need);
  need(s.pp == 1 && (s.zero_stage == 2 || s.zero_stage == 3),
       "pp = 1 and ZeRO stage 2 (reshard_after_forward=False) or 3 (True)", fmt::format("pp {}, stage {}", s.pp, s.zero_stage));
  need(s.offload_params == s.offload_optimizer && s.offload_params != OffloadTarget::NVME,
       "offload of both parameters and optimizer to cpu (CPUOffloadPolicy) or of neither", "another offload");
}

// FSDP2's gathered bf16 units (every layer from its forward to its backward without resharding,
// else two layers) plus the root (unsharded throughout under FSDP2's default), and a layer's
// unsharded bf16 gradients with their reduce_dtype copy during its reduce-scatter: an upper bound
// on what is alive at once (the replay allocates and frees them as FSDP2 does).
void buffers(const ModelSpec& m, const Strategy& s, const StageMemory& st, BufferMemory& buf) {
  pytorch_buffers(m, s, st, buf);
  const RankParams r = rank_params(m, s.tp);
  const double e = dtype_bytes(s.stack.param_dtype);
  const double root = r.embedding + r.head;
  buf.gathered_params_bytes = (s.zero_stage >= 3 ? 2.0 * r.per_layer + root : st.params_on_rank) * e;
  buf.comm_bucket_bytes = r.per_layer * (2.0 + dtype_bytes(s.stack.reduce_dtype));
}

// The calibration measured each sharding on its own.
std::string dispatch_key(const Strategy& s) {
  return s.offload_params != OffloadTarget::NONE ? "pytorch-fsdp:offload"
         : s.zero_stage >= 3                     ? "pytorch-fsdp:zero3"
                                                 : "pytorch-fsdp:zero2";
}

}  // namespace

const StackModel& pytorch_fsdp_stack() {
  static const StackModel model = [] {
    StackModel m = pytorch_eager_model(StackKind::PYTORCH_FSDP);
    // The MixedPrecisionPolicy casts parameters as they are gathered, not autocast at each use.
    m.autocast = false;
    m.fully_shard = true;
    m.mixed_precision_policy = true;
    // The module computes on the bf16 parameters FSDP2 gathers, under no autocast: its layer is what
    // a pure bf16 capture records (an autocast capture's weight casts would repeat the casts FSDP2
    // makes as it gathers).
    m.layer_in_param_dtype = true;
    m.states = states;
    m.refusals = refusals;
    m.buffers = buffers;
    m.dispatch_key = dispatch_key;
    return m;
  }();
  return model;
}

}  // namespace trainsim::wl
