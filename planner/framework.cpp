#include "framework.hpp"

#include <fmt/format.h>

#include "config_error.hpp"
#include "enum_flag.hpp"
#include "stack_capabilities.hpp"
#include "stack_model.hpp"
#include "stage_partition.hpp"

namespace trainsim::planner {
namespace {

// A fixed setting agrees with the strategy's value, or is not set.
template <class T>
bool agrees(const wl::Setting<T>& fixed, const T& value) {
  return !fixed || *fixed == value;
}

// Megatron-LM's --recompute-method block N recomputes only the first N layers of each pipeline
// chunk (transformer_block.py); trainsim models every layer recomputed, so only the layouts whose
// chunks hold at most N layers are what the launch line runs as modeled (resolve_inputs refuses
// the others when the layout is given).
bool block_recompute_covers(const wl::StrategyInput& x, const wl::Strategy& s, const wl::ModelSpec& m) {
  if (!x.recompute_method || *x.recompute_method != "block" || !x.recompute_num_layers) return true;
  if (s.recompute != wl::Recompute::FULL || !m.has_architecture()) return true;
  const wl::StagePartition p = wl::partition_stages(m, s);
  for (int vs = 0; vs < p.virtual_stages(); ++vs) {
    if (p.layer_count(vs) > *x.recompute_num_layers) return false;
  }
  return true;
}

}  // namespace

Framework resolve_framework(const FrameworkFlags& f, wl::ModelSpec& model) {
  Framework fw;
  fw.allow_async = f.allow_async;
  std::vector<std::string> named;
  if (!f.deepspeed_file.empty()) {
    fw.fixed.merge(wl::strategy_from_deepspeed(f.deepspeed_file));
    fw.stack.kind = wl::StackKind::DEEPSPEED;
    named.push_back("--deepspeed " + f.deepspeed_file);
  }
  if (!f.megatron_args.empty()) {
    if (!f.deepspeed_file.empty() && !f.stack) {
      throw ConfigError("--megatron-args", "--megatron-args",
                        "--stack to say which framework runs the step when both --deepspeed and --megatron-args are given",
                        "no --stack");
    }
    fw.fixed.merge(wl::strategy_from_megatron_args(f.megatron_args));
    fw.stack.kind = wl::StackKind::MEGATRON;
    named.push_back("--megatron-args");
    // The arguments are the user's launch line: a feature they do not turn on stays at Megatron-LM's
    // default, off (megatron/training/arguments.py: --sequence-parallel, --use-distributed-optimizer
    // and the --recompute-* arguments are off unless given). The layout (--tensor-/--pipeline-model-
    // parallel-size, virtual stages, --micro-batch-size) is what the plan chooses where not given.
    const std::string def = "--megatron-args (Megatron-LM's default)";
    if (!fw.fixed.sp) fw.fixed.sp.set(false, def);
    if (!fw.fixed.zero) fw.fixed.zero.set(0, def);
    if (!fw.fixed.recompute) fw.fixed.recompute.set(wl::Recompute::NONE, def);
  }
  if (!f.deepspeed_file.empty()) {
    // Likewise a ds_config: no zero_optimization section is stage 0, no offload section none
    // (deepspeed/runtime/zero/config.py, offload_config.py defaults).
    const std::string def = "--deepspeed (DeepSpeed's default)";
    if (!fw.fixed.zero) fw.fixed.zero.set(0, def);
    if (!fw.fixed.offload_params) fw.fixed.offload_params.set(wl::OffloadTarget::NONE, def);
    if (!fw.fixed.offload_optimizer) fw.fixed.offload_optimizer.set(wl::OffloadTarget::NONE, def);
  }
  if (f.stack) {
    const wl::StackKind kind = wl::names::parse_flag("--stack", *f.stack, wl::names::STACK);
    if (!wl::stack_model(kind).plannable) {
      throw ConfigError("--stack", "--stack", "a framework to plan for (trainsim-reference is our own step, for simulate)",
                        "\"trainsim-reference\"");
    }
    fw.stack.kind = kind;
    named.insert(named.begin(), "--stack " + *f.stack);
  }
  // Megatron-DeepSpeed: DeepSpeed running Megatron-LM's model (workloads/stacks/training_stack.hpp).
  const wl::StackModel& stack = wl::stack_model(fw.stack.kind);
  fw.stack.megatron_mpu = stack.runs_megatron_model && !f.megatron_args.empty();
  fw.wrapper_for = stack.wrapper_for;
  for (const std::string& n : named) fw.source += (fw.source.empty() ? "" : ", ") + n;
  fw.no_effect = fw.fixed.no_effect;
  if (fw.fixed.model.any()) model = wl::apply_model_overrides(fw.fixed.model, model, fw.fixed.tp ? *fw.fixed.tp : 1);
  if (fw.fixed.precision) model.numerics = *fw.fixed.precision;
  if (fw.fixed.attention) model.attention = *fw.fixed.attention;
  if (stack.bf16_mixed_only && model.numerics != wl::Numerics::BF16_MIXED) {
    throw ConfigError("--stack", "--stack",
                      fmt::format("a model trained in bf16-mixed for stack {} (torch.autocast to bf16; add --precision "
                                  "bf16-mixed)",
                                  wl::to_string(fw.stack.kind)),
                      std::string(wl::to_string(model.numerics)));
  }
  return fw;
}

FixedQuestion fixed_question(const Framework& f) {
  FixedQuestion q;
  if (f.fixed.global_batch) {
    q.global_batch = *f.fixed.global_batch;
    q.global_batch_origin = f.fixed.global_batch.origin;
  }
  if (f.fixed.seq) {
    q.seq = *f.fixed.seq;
    q.seq_origin = f.fixed.seq.origin;
  }
  return q;
}

std::optional<wl::Strategy> as_run_by(const Framework& f, const wl::Strategy& candidate, const wl::ModelSpec& m) {
  if (wl::asynchronous(candidate) && !f.allow_async) return std::nullopt;
  const wl::StrategyInput& x = f.fixed;
  const wl::Strategy& s = candidate;
  if (!(agrees(x.tp, s.tp) && agrees(x.pp, s.pp) && agrees(x.dp, s.dp) && agrees(x.vpp, s.vpp) && agrees(x.sp, s.sp) &&
        agrees(x.zero, s.zero_stage) && agrees(x.offload_params, s.offload_params) &&
        agrees(x.offload_optimizer, s.offload_optimizer) && agrees(x.offload_activations, s.offload_activations) &&
        agrees(x.recompute, s.recompute) && agrees(x.l2l, s.l2l) && agrees(x.delayed_update, s.delayed_update) &&
        agrees(x.micro_batch, s.micro_batch) && agrees(x.first_stage_layers, s.first_stage_layers) &&
        agrees(x.last_stage_layers, s.last_stage_layers))) {
    return std::nullopt;
  }
  if (x.schedule && s.pp > 1 && *x.schedule != s.schedule) return std::nullopt;
  if (x.grad_accum && s.micro_batches() != *x.grad_accum) return std::nullopt;
  if (!block_recompute_covers(x, s, m)) return std::nullopt;
  wl::Strategy out = s;
  if (f.stack.named()) {
    out.stack = f.stack;
    if (f.wrapper_for != nullptr) out.stack.kind = f.wrapper_for(s);
    if (wl::stack_cannot_run(out, m)) return std::nullopt;
  }
  if (x.buffers_set) out.buffers = x.buffers;
  return out;
}

std::vector<std::string> framework_notes(const Framework& f) {
  std::vector<std::string> out;
  if (f.named()) {
    out.push_back(fmt::format("framework: {} ({}); only what it runs is searched (planner/framework.hpp)",
                              wl::to_string(f.stack.kind), f.source));
  }
  if (!f.allow_async) {
    out.push_back(
        "asynchronous schemes (ZeRO-Offload's delayed update, PipeDream, PipeDream-2BW) not searched: they change the "
        "optimizer's math (--allow-async searches them)");
  }
  for (const std::string& k : f.no_effect) out.push_back("no effect on what trainsim computes: " + k);
  return out;
}

std::string async_caveat(const wl::Strategy& s) {
  if (s.delayed_update) {
    return "changes the optimizer's math: each step's update is applied one step late (ZeRO-Offload's delayed "
           "parameter update, Ren et al. 2021 Sec. 5.2)";
  }
  if (wl::weight_stashing_pipeline(s)) {
    return s.schedule == wl::Schedule::PIPEDREAM
               ? "changes the optimizer's math: each micro-batch's backward uses the weights its forward saw, several "
                 "versions apart (PipeDream's weight stashing, Narayanan et al. 2019)"
               : "changes the optimizer's math: gradients are applied to weights one version newer than those that "
                 "computed them (PipeDream-2BW, Narayanan et al. 2021)";
  }
  return {};
}

}  // namespace trainsim::planner
