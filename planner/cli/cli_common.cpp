#include "cli_common.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace trainsim::cli {

CLI::Validator whole_number(const wl::IntLimit& limit) {
  return CLI::Validator(
      [limit](std::string& text) -> std::string {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == text.data() + text.size() && v > limit.max)) {
          return fmt::format("expected a whole number <= {}, got {}", limit.max, text);
        }
        if (ec != std::errc() || end != text.data() + text.size()) {
          return fmt::format("expected a whole number in [{}, {}], got \"{}\"", limit.min, limit.max, text);
        }
        if (v < limit.min) return fmt::format("expected a whole number >= {}, got {}", limit.min, text);
        return std::string();
      },
      "", "");
}

namespace {
// --params: a count such as 7.5e9, checked for being a number here and for its range where the
// model is made (model_loader.cpp).
CLI::Validator a_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
          return fmt::format("expected a number such as 7.5e9, got \"{}\"", text);
        }
        return std::string();
      },
      "", "");
}
}  // namespace

void add_input_flags(CLI::App& app, planner::InputFlags& f, ModelFlags model_flags) {
  namespace lim = wl::limits;
  app.add_option("--model", f.model, "Model: a built-in name (see `trainsim list`), a model JSON or a Hugging Face config.json")
      ->group("Model");
  if (model_flags == ModelFlags::ANY) {
    app.add_option("--params", f.params, "A raw parameter count (e.g. 7.5e9): model states only, as ZeRO's Table 1")
        ->group("Model")
        ->check(a_number());
  }
  app.add_option("--hw", f.hw, "Cluster: a built-in profile name or a profile JSON")->group("Cluster")->capture_default_str();
  app.add_option("--gpus", f.gpus, "GPUs in total")->group("Cluster")->check(whole_number(lim::GPUS));
  app.add_option("--nodes", f.nodes, "Nodes")->group("Cluster")->check(whole_number(lim::NODES));
  app.add_option("--strategy", f.strategy_file, "Strategy JSON (flags override it)")->group("Strategy");
  app.add_option("--deepspeed", f.deepspeed_file, "DeepSpeed ds_config.json (flags override it)")->group("Strategy");
  app.add_option("--capture", f.capture_file,
                 "Your layer as trainsim_capture recorded it (workloads/capture): costs the layers, embedding and head "
                 "from its ops under --stack pytorch, pytorch-ddp, pytorch-fsdp (a pure bf16 capture: FSDP2 computes on bf16 "
                 "parameters) or pytorch-pipelining")
      ->group("Model");
  app.add_option("--megatron-args", f.megatron_args, "Megatron-LM arguments, quoted (flags override them)")
      ->group("Strategy");
  app.add_option("--dp", f.dp, "Data-parallel degree")->group("Strategy")->check(whole_number(lim::PARALLEL_DEGREE));
  app.add_option("--tp", f.tp, "Tensor-parallel degree")->group("Strategy")->check(whole_number(lim::PARALLEL_DEGREE));
  app.add_option("--pp", f.pp, "Pipeline-parallel degree")->group("Strategy")->check(whole_number(lim::PARALLEL_DEGREE));
  app.add_option("--vpp", f.vpp, "Virtual pipeline stages per GPU (interleaved schedule)")
      ->group("Strategy")
      ->check(whole_number(lim::PARALLEL_DEGREE));
  // Boolean flags set their setting only when given: CLI11 assigns false to an optional<bool>
  // flag that was not given, which then overrode a strategy file's true (the file said sp,
  // l2l or delayed_update and the flags, unsaid, turned it off).
  app.add_flag_function(
         "--sp,!--no-sp", [&f](std::int64_t n) { f.sp = n > 0; }, "Sequence parallelism (with tensor parallelism)")
      ->group("Strategy");
  app.add_option("--first-stage-layers", f.first_stage_layers,
                 "Layers of the first pipeline stage (Megatron's --decoder-first-pipeline-num-layers; default: balanced)")
      ->group("Strategy")
      ->check(whole_number(lim::LAYERS));
  app.add_option("--last-stage-layers", f.last_stage_layers,
                 "Layers of the last pipeline stage (Megatron's --decoder-last-pipeline-num-layers; default: balanced)")
      ->group("Strategy")
      ->check(whole_number(lim::LAYERS));
  app.add_option("--schedule", f.schedule, "Pipeline schedule: gpipe, 1f1b, interleaved, pipedream, 2bw; or hydra")
      ->group("Strategy");
  app.add_option("--shards", f.shards, "Hydra's model shards per GPU (default: one per layer)")
      ->group("Strategy")
      ->check(whole_number(lim::LAYERS));
  app.add_option("--zero", f.zero, "ZeRO stage 0-3")->group("Strategy")->check(whole_number(wl::IntLimit{0, 3}));
  app.add_option("--offload-params", f.offload_params, "Parameter offload: none, cpu, nvme (ZeRO-3)")->group("Strategy");
  app.add_option("--offload-optimizer", f.offload_optimizer, "Optimizer-state offload: none, cpu, nvme")
      ->group("Strategy");
  app.add_option("--offload-activations", f.offload_activations, "Activation-checkpoint offload: none, cpu")
      ->group("Strategy");
  app.add_option("--recompute", f.recompute, "Activation recompute: none, selective, full")->group("Strategy");
  app.add_option("--memory-headroom", f.memory_headroom,
                 fmt::format("Share of the usable GPU memory left free at the replayed reserved peak (default {:g})",
                             planner::DEFAULT_MEMORY_HEADROOM))
      ->group("Cluster");
  app.add_option("--stack", f.stack,
                 "Training stack: idealized (default), megatron, deepspeed, deepspeed-0.3 (its 2020 release), pytorch, "
                 "pytorch-ddp, pytorch-fsdp, pytorch-pipelining (workloads/stacks/training_stacks.md)")
      ->group("Strategy");
  app.add_flag_function(
         "--l2l", [&f](std::int64_t) { f.l2l = true; }, "L2L: one layer on the GPU at a time, model states on the host")
      ->group("Strategy");
  app.add_flag_function(
         "--dpu", [&f](std::int64_t) { f.delayed_update = true; }, "ZeRO-Offload's one-step delayed parameter update")
      ->group("Strategy");
  app.add_option("--micro-batch", f.micro_batch, "Micro-batch size per GPU")
      ->group("Strategy")
      ->check(whole_number(lim::MICRO_BATCH));
  app.add_option("--global-batch", f.global_batch, "Global batch size (default: micro-batch x dp x pp)")
      ->group("Strategy")
      ->check(whole_number(lim::GLOBAL_BATCH));
  app.add_option("--seq", f.seq, "Sequence length (default: the model's)")
      ->group("Strategy")
      ->check(whole_number(lim::SEQ));
  app.add_option("--precision", f.precision, "Numerics: fp16-mixed, bf16-mixed, bf16, fp32")->group("Model");
  app.add_option("--attention", f.attention, "Attention: materialized, flash")->group("Model");
}

void add_output_flags(CLI::App& app, OutputFlags& out, std::initializer_list<std::string> formats) {
  app.add_option("--format", out.format, "Output format")
      ->check(CLI::IsMember(std::vector<std::string>(formats)))
      ->capture_default_str();
  app.add_option("-o,--output", out.output, "Write to this file instead of standard output");
}

}  // namespace trainsim::cli
