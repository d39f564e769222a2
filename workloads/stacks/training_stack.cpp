#include "training_stack.hpp"

#include "enum_names.hpp"
#include "stack_model.hpp"

namespace trainsim::wl {

std::string_view to_string(StackKind k) { return names::name_of(k, names::STACK); }

std::string_view to_string(TensorDtype d) { return names::name_of(d, names::TENSOR_DTYPE); }

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
