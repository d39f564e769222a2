// DeepSpeed ZeRO (v0.16.5): 16-bit parameters, fp32 gradient partitions and optimizer states
// (training_stacks.md, "DeepSpeed").
#include <fmt/format.h>

#include "stack_modules.hpp"

namespace trainsim::wl {

void deepspeed_states(const TrainingStack&, Numerics n, int, std::int64_t, StackStates& st) {
  // 16-bit parameters; the optimizer's fp32 gradient partition (accumulated there) and fp32
  // master weights and moments, partitioned by stage; gradients reduced in the 16-bit dtype.
  const StateBytes seed = state_bytes(n);
  const bool mixed = n == Numerics::BF16_MIXED || n == Numerics::FP16_MIXED;
  st.params = seed.params;
  st.grads = mixed ? 4 : seed.grads;
  st.optimizer = seed.optimizer;
  st.wire_grad = seed.grads;
  st.param_coordinator = true;
  st.row = "DeepSpeed";
}

void deepspeed_refusals(const Strategy& s, const ModelSpec&, const StackNeed& need) {
  // DeepSpeed 0.16.5: its pipeline engine runs TrainSchedule, a synchronous 1F1B
  // (deepspeed/runtime/pipe/schedule.py), without interleaving or sequence parallelism; its
  // activation checkpointing (deepspeed/runtime/activation_checkpointing) recomputes whole
  // layers; ZeRO-Offload has no delayed parameter update there (deepspeed/runtime/zero/).
  // Tensor parallelism needs the model's own split layers: the engine on a model as written
  // has none, but given Megatron-LM's model and its mpu (Megatron-DeepSpeed, the ZeRO papers'
  // runs) it partitions over the mpu's data-parallel group (deepspeed/utils/groups.py,
  // _get_data_parallel_group) beside Megatron's tensor slicing.
  need(s.tp == 1 || s.stack.megatron_mpu,
       "tp = 1 (DeepSpeed's engine splits no layers unless the model is Megatron-LM's: add --megatron-args)",
       fmt::format("tp {}", s.tp));
  need(s.pp == 1 || s.schedule == Schedule::ONE_F_ONE_B, "schedule 1f1b (DeepSpeed's pipeline engine)",
       std::string(to_string(s.schedule)));
  need(!s.sp, "no sequence parallelism", "sp");
  need(s.recompute != Recompute::SELECTIVE, "recompute none or full (DeepSpeed checkpoints whole layers)", "selective");
  refuse_l2l_hydra_and_delayed_update(s, need);
}

namespace {

StackModel make() {
  StackModel m;
  m.kind = StackKind::DEEPSPEED;
  m.caching_allocator = true;
  m.runs_megatron_model = true;
  m.states = deepspeed_states;
  m.refusals = deepspeed_refusals;
  m.dispatch_key = dispatch_key_by_name;
  return m;
}

}  // namespace

const StackModel& deepspeed_stack() {
  static const StackModel model = make();
  return model;
}

}  // namespace trainsim::wl
