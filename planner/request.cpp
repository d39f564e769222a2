#include "request.hpp"

#include <fmt/format.h>

#include "captured_model.hpp"
#include "committed_captures.hpp"
#include "config_error.hpp"
#include "enum_flag.hpp"
#include "cost_model.hpp"
#include "enum_names.hpp"
#include "feasibility.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "profile_loader.hpp"
#include "stack_model.hpp"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "unknown"
#endif

namespace trainsim::planner {
namespace {

using wl::names::parse_flag;

wl::StrategyInput strategy_from_flags(const InputFlags& f) {
  wl::StrategyInput in;
  auto set = [](auto& setting, const auto& value, const char* flag) {
    if (value) setting.set(*value, flag);
  };
  set(in.gpus, f.gpus, "--gpus");
  set(in.nodes, f.nodes, "--nodes");
  set(in.dp, f.dp, "--dp");
  set(in.tp, f.tp, "--tp");
  set(in.pp, f.pp, "--pp");
  set(in.vpp, f.vpp, "--vpp");
  set(in.first_stage_layers, f.first_stage_layers, "--first-stage-layers");
  set(in.last_stage_layers, f.last_stage_layers, "--last-stage-layers");
  set(in.shards, f.shards, "--shards");
  set(in.zero, f.zero, "--zero");
  set(in.sp, f.sp, "--sp");
  set(in.l2l, f.l2l, "--l2l");
  set(in.delayed_update, f.delayed_update, "--dpu");
  set(in.micro_batch, f.micro_batch, "--micro-batch");
  set(in.global_batch, f.global_batch, "--global-batch");
  set(in.seq, f.seq, "--seq");
  if (f.schedule) in.schedule.set(parse_flag("--schedule", *f.schedule, wl::names::SCHEDULE), "--schedule");
  if (f.offload_params) {
    in.offload_params.set(parse_flag("--offload-params", *f.offload_params, wl::names::OFFLOAD), "--offload-params");
  }
  if (f.offload_optimizer) {
    in.offload_optimizer.set(parse_flag("--offload-optimizer", *f.offload_optimizer, wl::names::OFFLOAD),
                             "--offload-optimizer");
  }
  if (f.offload_activations) {
    in.offload_activations.set(
        parse_flag("--offload-activations", *f.offload_activations, wl::names::ACTIVATION_OFFLOAD),
        "--offload-activations");
  }
  if (f.recompute) in.recompute.set(parse_flag("--recompute", *f.recompute, wl::names::RECOMPUTE), "--recompute");
  if (f.precision) in.precision.set(parse_flag("--precision", *f.precision, wl::names::NUMERICS), "--precision");
  if (f.stack) {
    // The flag names the stack with its defaults (workloads/stacks/training_stacks.md); options such as
    // gradient_as_bucket_view go in the strategy file's "stack" object.
    wl::TrainingStack stack;
    stack.kind = parse_flag("--stack", *f.stack, wl::names::STACK);
    in.stack.set(stack, "--stack");
  }
  if (f.attention) in.attention.set(parse_flag("--attention", *f.attention, wl::names::ATTENTION), "--attention");
  return in;
}

// The GPU must compute in the precision the model trains in: a profile without that peak (a V100
// has no bf16) cannot run the configuration, which is then answered as infeasible with the reason
// (never an error deep inside the simulator). Raw parameter counts need no compute.
std::optional<std::string> missing_peak(const Request& r) {
  if (!r.inputs.model.has_architecture()) return std::nullopt;
  const hw::ComputePrecision needed = sim::compute_precision(r.inputs.model.numerics);
  if (r.profile.gpu.peak_TFLOPs.count(needed) > 0) return std::nullopt;
  std::string listed;
  for (const auto& [precision, tflops] : r.profile.gpu.peak_TFLOPs) {
    listed += (listed.empty() ? "" : ", ") + std::string(hw::to_string(precision));
  }
  return fmt::format("the {} of {} has no {} peak (gpu.peak_TFLOPs lists {}), the precision {} training computes in; "
                     "choose other numerics with --precision",
                     printable(r.profile.gpu.model), printable(r.profile.name), hw::to_string(needed), listed,
                     wl::to_string(r.inputs.model.numerics));
}

}  // namespace

Request resolve_request(const InputFlags& f) {
  Request r;
  r.profile = hw::resolve_profile(f.hw, "--hw");

  wl::StrategyInput input;
  if (f.base_strategy) input.merge(*f.base_strategy);
  if (!f.strategy_file.empty()) input.merge(wl::strategy_from_json(f.strategy_file));
  if (!f.deepspeed_file.empty()) input.merge(wl::strategy_from_deepspeed(f.deepspeed_file));
  if (!f.megatron_args.empty()) input.merge(wl::strategy_from_megatron_args(f.megatron_args));
  input.merge(strategy_from_flags(f));
  if (!f.megatron_args.empty() && input.stack && wl::stack_model((*input.stack).kind).runs_megatron_model) {
    input.stack.value->megatron_mpu = true;  // Megatron-DeepSpeed (workloads/stacks/training_stack.hpp)
  }

  if (!f.model.empty() && f.params) {
    throw ConfigError("--params", "--params", "either --model or --params, not both", "both");
  }
  std::optional<wl::ModelSpec> model;
  if (f.params) model = wl::model_from_param_count(*f.params);
  if (!f.model.empty()) model = wl::resolve_model(f.model);
  if (input.model.any()) {
    if (model && !model->has_architecture()) {
      throw ConfigError("--megatron-args", "--num-layers", "no model arguments together with --params", "both");
    }
    if (!model && !input.model.complete()) {
      throw ConfigError("--megatron-args", "--num-layers",
                        "--num-layers, --hidden-size and --num-attention-heads (or a --model)", "an incomplete model");
    }
    model = wl::apply_model_overrides(input.model, model, input.tp ? *input.tp : 1);
  }
  if (!model) {
    throw ConfigError("command line", "--model", "a model: --model NAME|config.json, --params N or Megatron-LM model arguments",
                      "none");
  }

  // A capture trains as it recorded: its numerics are the model's unless --precision says otherwise
  // (then attach_capture refuses the mismatch, naming both). Under a stack whose layer computes on
  // its param_dtype parameters (FSDP2) the capture is that layer's pure numerics, not the run's.
  std::optional<wl::CaptureDocument> capture;
  if (!f.capture_file.empty()) capture = wl::load_capture(f.capture_file);
  if (capture && model->has_architecture()) {
    model->capture_numerics = wl::capture_numerics(*capture);
    if (!input.stack || !wl::stack_model((*input.stack).kind).layer_in_param_dtype) model->numerics = *model->capture_numerics;
  }
  // Likewise a family with committed captures (committed_captures.hpp) in their numerics: pure bf16
  // or autocast; which capture, if any, is decided once the stack and recompute are known.
  const wl::Numerics trains_in = input.precision ? *input.precision : model->numerics;
  if (!capture && wl::trains_as_committed_captures(*model, trains_in)) model->capture_numerics = trains_in;
  const auto refuse_uncaptured = [&] {
    throw ConfigError(model->origin, "model_type",
                      "a family with a hand-written layer (gpt2, gpt_neox, llama, bert), or this one with a capture of its layer: "
                      "record it with `trainsim capture --hf-config " + model->origin +
                          " --micro-batch B --seq S --precision autocast-bf16` (workloads/capture/README.md) and pass --capture FILE",
                      "\"" + model->name + "\"");
  };
  const wl::ClusterShape shape{r.profile.gpus_per_node(), r.profile.node_count, r.profile.name};
  r.inputs = wl::resolve_inputs(input, *model, shape);
  r.infeasible_reason = r.inputs.infeasible_reason;
  if (!r.infeasible_reason) r.infeasible_reason = cluster_infeasibility(r.inputs.strategy, r.profile);
  if (!r.infeasible_reason) r.infeasible_reason = missing_peak(r);
  if (f.memory_headroom) r.memory_headroom = checked_headroom(*f.memory_headroom, "--memory-headroom");
  // A Hugging Face config, or a model of our scripts' structure, under a PyTorch stack takes the
  // committed capture of its layer (committed_captures.hpp) where the user gave none: the layer
  // PyTorch runs, not a hand-written one.
  std::optional<std::string> committed;
  if (f.capture_file.empty()) committed = wl::committed_capture_for_run(r.inputs.model, r.inputs.strategy);
  if (model->layer_from_capture && f.capture_file.empty() && !committed) refuse_uncaptured();
  if (!r.infeasible_reason && (capture || committed)) {
    r.inputs.model.capture = capture ? wl::attach_capture(f.capture_file, std::move(*capture), "--capture", r.inputs.model, r.inputs.strategy)
                                     : wl::attach_capture(*committed, "the committed capture", r.inputs.model, r.inputs.strategy,
                                                         wl::committed_capture_name(*committed));
    if (r.inputs.model.layer_from_capture) r.inputs.model.captured_params = r.inputs.model.capture->params;
  }
  return r;
}

std::string human_count(double n) {
  if (n >= 1e15) return fmt::format("{:.3g}", n);
  if (n >= 1e12) return fmt::format("{:.3f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.0f}M", n / 1e6);
  return fmt::format("{:.0f}", n);
}

nlohmann::ordered_json stack_json(const wl::TrainingStack& stack) {
  nlohmann::ordered_json j = {{"name", wl::to_string(stack.kind)}};
  const wl::StackModel& model = wl::stack_model(stack.kind);
  if (model.bucket_view_option) j["gradient_as_bucket_view"] = stack.gradient_as_bucket_view;
  if (model.mixed_precision_policy) {
    j["param_dtype"] = wl::to_string(stack.param_dtype);
    j["reduce_dtype"] = wl::to_string(stack.reduce_dtype);
  }
  return j;
}

nlohmann::ordered_json inputs_json(const Request& r) {
  const wl::ModelSpec& m = r.inputs.model;
  const wl::Strategy& s = r.inputs.strategy;
  nlohmann::ordered_json model;
  model["name"] = m.name;
  model["origin"] = m.origin;
  model["params"] = wl::total_params(m);
  if (m.has_architecture()) {
    model["layers"] = m.layers;
    model["hidden"] = m.hidden;
    model["heads"] = m.heads;
    model["kv_heads"] = m.kv_heads;
    model["ffn_hidden"] = m.ffn_hidden;
    model["vocab"] = m.vocab;
    model["seq_len"] = m.seq_len;
    model["tied_embeddings"] = m.tied_embeddings;
    // A family known only from its capture has none of trainsim's layer kinds: its layer is the capture.
    if (!m.layer_from_capture) {
      model["norm"] = wl::to_string(m.norm);
      model["mlp"] = wl::to_string(m.mlp);
      model["position"] = wl::to_string(m.position);
      model["attention"] = wl::to_string(m.attention);
    }
    if (m.capture) model["layer_capture"] = m.capture->id;
    if (!m.ignored_keys.empty()) model["ignored_hf_keys"] = m.ignored_keys;
  }
  model["precision"] = wl::to_string(m.numerics);

  nlohmann::ordered_json strategy;
  strategy["gpus"] = s.gpus;
  strategy["nodes"] = s.nodes;
  strategy["dp"] = s.dp;
  strategy["tp"] = s.tp;
  strategy["pp"] = s.pp;
  strategy["vpp"] = s.vpp;
  strategy["first_stage_layers"] = s.first_stage_layers;
  strategy["last_stage_layers"] = s.last_stage_layers;
  strategy["shards"] = s.shards;
  strategy["sp"] = s.sp;
  strategy["schedule"] = wl::to_string(s.schedule);
  strategy["zero"] = s.zero_stage;
  strategy["offload_params"] = wl::to_string(s.offload_params);
  strategy["offload_optimizer"] = wl::to_string(s.offload_optimizer);
  strategy["offload_activations"] = wl::to_string(s.offload_activations);
  strategy["recompute"] = wl::to_string(s.recompute);
  strategy["l2l"] = s.l2l;
  strategy["delayed_update"] = s.delayed_update;
  // Only an explicit stack is echoed, so results without one are unchanged.
  if (s.stack.named()) strategy["stack"] = stack_json(s.stack);
  strategy["micro_batch"] = s.micro_batch;
  strategy["global_batch"] = s.global_batch;
  strategy["micro_batches"] = s.micro_batches();
  strategy["seq"] = s.seq;

  nlohmann::ordered_json cluster;
  cluster["name"] = r.profile.name;
  cluster["origin"] = r.profile.origin;
  cluster["gpu"] = r.profile.gpu.model;
  cluster["gpus_per_node"] = r.profile.gpus_per_node();
  cluster["gpu_memory_GiB"] = r.profile.gpu.memory_GiB;
  cluster["node_count"] = r.profile.node_count;

  nlohmann::ordered_json j;
  j["model"] = model;
  j["strategy"] = strategy;
  j["cluster"] = cluster;
  j["notes"] = r.inputs.notes;
  j["no_effect"] = r.inputs.no_effect;
  return j;
}

nlohmann::ordered_json result_header(const Request& r, std::string_view command, int schema_version) {
  nlohmann::ordered_json j;
  j["schema_version"] = schema_version;
  j["kind"] = "trainsim." + std::string(command);
  j["provenance"] = provenance_json(r, command);
  j["inputs"] = inputs_json(r);
  return j;
}

nlohmann::ordered_json provenance_json(const Request& r, std::string_view command) {
  nlohmann::ordered_json j;
  j["tool"] = "trainsim";
  j["version"] = TRAINSIM_VERSION;
  j["command"] = command;
  j["hwprofile"] = {{"name", r.profile.name}, {"origin", r.profile.origin}, {"provenance", r.profile.provenance}};
  j["model"] = {{"name", r.inputs.model.name}, {"origin", r.inputs.model.origin}};
  return j;
}

}  // namespace trainsim::planner
