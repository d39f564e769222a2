#pragma once
// The stack modules' own declarations, for stack_models.cpp (the registry) and the PyTorch
// wrappers that share the eager stack's values (pytorch_stack.cpp). Nothing outside
// workloads/stacks/ includes this.

#include "stack_model.hpp"

namespace trainsim::wl {

const StackModel& idealized_stack();
const StackModel& megatron_stack();
const StackModel& deepspeed_stack();
const StackModel& deepspeed_v03_stack();
const StackModel& pytorch_stack();
const StackModel& pytorch_ddp_stack();
const StackModel& pytorch_fsdp_stack();
const StackModel& pytorch_pipelining_stack();
const StackModel& trainsim_reference_stack();

// DeepSpeed's states and refusals (deepspeed_stack.cpp), which its 0.3 release shares.
void deepspeed_states(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum, StackStates& st);
void deepspeed_refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need);
// DeepSpeed 0.3's CPU checkpointing, and v0.3.15's ZeRO-3 where `zero_stage` is 3 (deepspeed_v03_zero3.cpp).
void deepspeed_v03_zero3_states(int zero_stage, StackStates& st);

// Megatron-LM and DeepSpeed run no L2L, Hydra or delayed parameter update.
void refuse_l2l_hydra_and_delayed_update(const Strategy& s, const StackNeed& need);

// A stack whose host-dispatch calibration is one entry under its own name (`--stack` spelling).
std::string dispatch_key_by_name(const Strategy& s);

// PyTorch eager under autocast or in pure bf16 (pytorch_stack.cpp): the values every PyTorch
// wrapper starts from, the conditions they share, and its saved tensors and buffers.
StackModel pytorch_eager_model(StackKind kind);
void pytorch_states(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum, StackStates& st);
void pytorch_refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need);
void pytorch_buffers(const ModelSpec& m, const Strategy& s, const StageMemory& st, BufferMemory& buf);

}  // namespace trainsim::wl
