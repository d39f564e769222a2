// Megatron-LM (core_v0.16.1): 16-bit parameters, fp32 main gradients, the distributed optimizer
// (training_stacks.md, "Megatron-LM").
#include <fmt/format.h>

#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void states(const TrainingStack&, Numerics n, int, std::int64_t, StackStates& st) {
  // 16-bit parameters the GEMMs read directly, a persistent fp32 main-gradient buffer that
  // accumulates and is reduced in fp32, fp32 master weights and Adam moments (sharded by the
  // distributed optimizer, zero_stage 1).
  const StateBytes seed = state_bytes(n);
  const bool mixed = n == Numerics::BF16_MIXED || n == Numerics::FP16_MIXED;
  st.params = seed.params;
  st.grads = mixed ? 4 : seed.grads;
  st.optimizer = seed.optimizer;
  st.wire_grad = mixed ? 4 : seed.grads;
  st.shard_grads = false;
  st.row = "Megatron-LM";
}

void refusals(const Strategy& s, const ModelSpec&, const StackNeed& need) {
  need(s.offload_params == OffloadTarget::NONE && s.offload_optimizer == OffloadTarget::NONE && s.zero_stage <= 1,
       "no offload and ZeRO stage 0 or 1 (the distributed optimizer)", "another setting");
  // Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py): 1F1B without and
  // with interleaving; no GPipe, no weight stashing, no L2L or Hydra.
  need(s.pp == 1 || s.schedule == Schedule::ONE_F_ONE_B || s.schedule == Schedule::INTERLEAVED,
       "schedule 1f1b or interleaved (Megatron-LM's pipeline schedules)", std::string(to_string(s.schedule)));
  refuse_l2l_hydra_and_delayed_update(s, need);
}


StackModel make() {
  StackModel m;
  m.kind = StackKind::MEGATRON;
  m.caching_allocator = true;
  m.states = states;
  m.refusals = refusals;
  m.dispatch_key = dispatch_key_by_name;
  return m;
}

}  // namespace

const StackModel& megatron_stack() {
  static const StackModel model = make();
  return model;
}

}  // namespace trainsim::wl
