// DistributedDataParallel under torch.autocast (training_stacks.md, "DDP").
#include <fmt/format.h>

#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void states(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum, StackStates& st) {
  pytorch_states(s, n, zero_stage, grad_accum, st);
  // DDP's flat buckets (one copy of every gradient, in its dtype) always exist; .grad are views
  // into them only with gradient_as_bucket_view and only for gradients made while the reducer
  // runs: under no_sync (gradient accumulation) .grad is a tensor of its own.
  st.bucket_copy = s.gradient_as_bucket_view && grad_accum <= 1 ? 0 : st.grads;
  st.scales_grads_into_buckets = true;
  st.row = "DDP";
}

void refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  pytorch_refusals(s, m, need);
  need(s.pp == 1 && s.zero_stage == 0, "pp = 1 and ZeRO stage 0", fmt::format("pp {}, stage {}", s.pp, s.zero_stage));
}


}  // namespace

const StackModel& pytorch_ddp_stack() {
  static const StackModel model = [] {
    StackModel m = pytorch_eager_model(StackKind::PYTORCH_DDP);
    m.bucket_view_option = true;
    m.states = states;
    m.refusals = refusals;
    m.dispatch_key = dispatch_key_by_name;
    return m;
  }();
  return model;
}

}  // namespace trainsim::wl
