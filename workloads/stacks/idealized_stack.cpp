// The papers' accounting, no framework (the default stack).
#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void states(const TrainingStack&, Numerics n, int, std::int64_t, StackStates& st) {
  // ZeRO Sec. 3.1: 2 + 2 + K bytes; gradients travel in the 16-bit dtype.
  const StateBytes seed = state_bytes(n);
  st.params = seed.params;
  st.grads = seed.grads;
  st.optimizer = seed.optimizer;
  st.wire_grad = seed.grads;
  st.row = "idealized";
}

StackModel make() {
  StackModel m;
  m.kind = StackKind::IDEALIZED;
  m.measurable = false;
  m.states = states;
  return m;
}

}  // namespace

const StackModel& idealized_stack() {
  static const StackModel model = make();
  return model;
}

}  // namespace trainsim::wl
