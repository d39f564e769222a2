// Strategy sources that are JSON files: our strategy schema and DeepSpeed's ds_config.json.
#include <fmt/format.h>

#include <limits>

#include "enum_names.hpp"
#include "limits.hpp"
#include "stack_model.hpp"
#include "strategy_input.hpp"
#include "strict_json.hpp"

namespace trainsim::wl {
namespace {

template <class T>
void take(Setting<T>& into, const Setting<T>& from) {
  if (from) into = from;
}

std::string at(const StrictObject& o, std::string_view key) { return o.source() + ": " + o.path_of(key); }

// DeepSpeed's buffer and bucket sizes, in elements: up to 10^12 (4 TB of fp32), beyond any GPU's
// or host's memory; buffer counts up to 1024.
const NumberRange ELEMENTS{1.0, 1e12, true, "a number of elements in [1, 1e12]"};
const NumberRange BUFFER_COUNT{1.0, 1024.0, true, "a buffer count in [1, 1024]"};
// The coordinator's sizes may be 0 (deepspeed/runtime/zero/config.py: ge=0): no prefetch, no reuse.
const NumberRange ELEMENTS_OR_ZERO{0.0, 1e12, true, "a number of elements in [0, 1e12]"};

template <class T>
void read_int(StrictObject& o, std::string_view key, Setting<T>& out, const IntLimit& limit) {
  if (auto v = read_optional_limited(o, key, limit)) out.set(static_cast<T>(*v), at(o, key));
}

template <class E, std::size_t N>
void read_choice(StrictObject& o, std::string_view key, Setting<E>& out, const names::Table<E, N>& table) {
  if (auto v = o.optional_choice<E>(key, table)) out.set(*v, at(o, key));
}

// DeepSpeed accepts "auto" only through the Hugging Face Trainer, which fills it in before
// DeepSpeed sees the file; we cannot guess the value, so we ask for it.
void reject_auto(const StrictObject& o, const nlohmann::json& j, std::string_view key) {
  if (j.contains(key) && j[std::string(key)].is_string() && j[std::string(key)] == "auto") {
    throw ConfigError(o.source(), o.path_of(key),
                      "a number (\"auto\" is filled in by the Hugging Face Trainer; write the value it would use)",
                      "\"auto\"");
  }
}

// A key DeepSpeed reads that changes nothing trainsim computes, with why: the answer prints
// "<file>: <key path> (<why>)".
struct NoEffect {
  std::string_view key;
  std::string_view why;
};

void mark_no_effect(StrictObject& o, StrategyInput& in, std::initializer_list<NoEffect> keys) {
  for (const auto& [key, why] : keys) {
    if (o.has(key)) {
      o.raw(key);
      in.no_effect.push_back(fmt::format("{} ({})", at(o, key), why));
    }
  }
}

// A key whose default is what trainsim replays and whose other values are not modeled: the
// default is listed as no effect, another value refused.
void refuse_unless_default(StrictObject& o, StrategyInput& in, std::string_view key, const nlohmann::json& fallback,
                           std::string_view what) {
  if (!o.has(key)) return;
  const nlohmann::json& given = o.raw(key);
  if (given == fallback) {
    in.no_effect.push_back(fmt::format("{} ({}, DeepSpeed's default)", at(o, key), fallback.dump()));
    return;
  }
  throw ConfigError(o.source(), o.path_of(key),
                    fmt::format("{} (DeepSpeed's default: {} is not modeled by trainsim)", fallback.dump(), what),
                    describe_json(given));
}

// "stack": a name ("pytorch-ddp"), or an object with the name and the stack's options
// (workloads/stacks/training_stacks.md): {"name": "pytorch-ddp", "gradient_as_bucket_view": true} or
// {"name": "pytorch-fsdp", "param_dtype": "bf16", "reduce_dtype": "fp32"}.
void read_stack(StrictObject& o, StrategyInput& in) {
  if (!o.has("stack")) return;
  TrainingStack stack;
  if (o.json().at("stack").is_object()) {
    StrictObject s = o.object("stack");
    stack.kind = s.choice<StackKind>("name", names::STACK);
    if (auto v = s.optional_boolean("gradient_as_bucket_view")) {
      if (!stack_model(stack.kind).bucket_view_option) {
        throw ConfigError(s.source(), s.path_of("gradient_as_bucket_view"), "no such option unless the stack is pytorch-ddp",
                          std::string(to_string(stack.kind)));
      }
      stack.gradient_as_bucket_view = *v;
    }
    for (auto key : {"param_dtype", "reduce_dtype"}) {
      if (!s.has(key)) continue;
      if (!stack_model(stack.kind).mixed_precision_policy) {
        throw ConfigError(s.source(), s.path_of(key), "no such option unless the stack is pytorch-fsdp",
                          std::string(to_string(stack.kind)));
      }
      (std::string_view(key) == "param_dtype" ? stack.param_dtype : stack.reduce_dtype) =
          s.choice<TensorDtype>(key, names::TENSOR_DTYPE);
    }
    s.finish();
  } else {
    stack.kind = o.choice<StackKind>("stack", names::STACK);
  }
  in.stack.set(stack, at(o, "stack"));
}

OffloadTarget read_device(StrictObject& o) {
  static constexpr names::Table<OffloadTarget, 3> DEVICES{
      {{OffloadTarget::NONE, "none"}, {OffloadTarget::CPU, "cpu"}, {OffloadTarget::NVME, "nvme"}}};
  const OffloadTarget device = o.choice<OffloadTarget>("device", DEVICES);
  // DeepSpeed swaps to files under nvme_path (runtime/swap_tensor/partitioned_param_swapper.py and
  // optimizer_utils.py join it into the swap folder): an nvme offload without one cannot start.
  if (device == OffloadTarget::NVME && (!o.has("nvme_path") || o.json().at("nvme_path").is_null())) {
    throw ConfigError(o.source(), o.path_of("nvme_path"),
                      "the directory DeepSpeed swaps to when device is \"nvme\" (DeepSpeed cannot offload to NVMe "
                      "without it)",
                      "none");
  }
  return device;
}

void read_offload_param(StrictObject o, StrategyInput& in) {
  in.offload_params.set(read_device(o), at(o, "device"));
  if (auto v = o.optional_number("buffer_count", BUFFER_COUNT)) in.buffers.offload_param_buffer_count = *v;
  if (auto v = o.optional_number("buffer_size", ELEMENTS)) in.buffers.offload_param_buffer_elems = *v;
  mark_no_effect(o, in,
                 {{"nvme_path", "the swap folder: the profile's storage stands for its drive"},
                  {"pin_memory", "pinned host buffers: the profile's host copy rates stand for them"},
                  {"max_in_cpu", "parameters kept in host memory under NVMe offload: not modeled per setting"}});
  o.finish();
}

void read_offload_optimizer(StrictObject o, StrategyInput& in) {
  in.offload_optimizer.set(read_device(o), at(o, "device"));
  if (auto v = o.optional_number("buffer_count", BUFFER_COUNT)) in.buffers.offload_optimizer_buffer_count = *v;
  if (o.has("ratio")) {
    const double ratio = o.number("ratio", fraction());
    if (ratio != 1.0) {
      throw ConfigError(o.source(), o.path_of("ratio"), "1.0 (partial optimizer offload is not modeled yet)",
                        fmt::format("{}", ratio));
    }
  }
  mark_no_effect(o, in,
                 {{"nvme_path", "the swap folder: the profile's storage stands for its drive"},
                  {"pin_memory", "pinned host buffers: the profile's host copy rates stand for them"},
                  {"fast_init", "how the swap files are first written: start-up, not the step"},
                  {"pipeline_read", "overlaps the NVMe optimizer swaps with the CPU step: not modeled per setting"},
                  {"pipeline_write", "overlaps the NVMe optimizer swaps with the CPU step: not modeled per setting"}});
  o.finish();
}

// MiCS (Zhang et al. 2022) and ZeRO++ (Wang et al. 2023) change what each GPU holds and what
// travels: MiCS shards within groups of mics_shard_size GPUs and replicates across them, hpZ keeps
// a secondary copy of the weights within a node, qwZ and qgZ send int8/int4 weights and
// gradients. None is modeled, so a value other than DeepSpeed's default (off,
// deepspeed/runtime/zero/config.py) is refused rather than answered as plain ZeRO.
void refuse_unmodeled_zero_variants(StrictObject& z, StrategyInput& in) {
  struct Variant {
    std::string_view key;
    nlohmann::json off;
    std::string_view what;
  };
  const Variant variants[] = {
      {"mics_shard_size", -1, "MiCS sharding (shards in groups, replicas across them)"},
      {"zero_hpz_partition_size", 1, "ZeRO++ hierarchical partitioning (a secondary weight copy per node)"},
      {"zero_quantized_weights", false, "ZeRO++ quantized weight all-gathers"},
      {"zero_quantized_gradients", false, "ZeRO++ quantized gradient reduce-scatter"},
  };
  for (const auto& v : variants) {
    if (!z.has(v.key)) continue;
    const nlohmann::json& given = z.raw(v.key);
    if (given == v.off) {
      in.no_effect.push_back(fmt::format("{} (off, DeepSpeed's default)", at(z, v.key)));
      continue;
    }
    throw ConfigError(z.source(), z.path_of(v.key),
                      fmt::format("{} (DeepSpeed's default, off: {} changes memory and traffic and is not modeled by "
                                  "trainsim)",
                                  v.off.dump(), v.what),
                      describe_json(given));
  }
}

void read_zero(StrictObject z, StrategyInput& in) {
  read_int(z, "stage", in.zero, IntLimit{0, 3});
  if (auto p = z.optional_object("offload_param")) read_offload_param(*p, in);
  if (auto p = z.optional_object("offload_optimizer")) read_offload_optimizer(*p, in);
  if (z.has("cpu_offload")) {
    throw ConfigError(z.source(), z.path_of("cpu_offload"),
                      "\"offload_optimizer\": {\"device\": \"cpu\"} (cpu_offload is DeepSpeed's deprecated spelling)",
                      describe_json(z.raw("cpu_offload")));
  }
  struct BufferKey {
    std::string_view key;
    double ZeroBuffers::*field;
    const NumberRange* range;
  };
  // The ZeRO-3 coordinator's three (stage3_*) are replayed as DeepSpeed's
  // partitioned_param_coordinator.py runs them: training_stacks.md, "DeepSpeed".
  static const BufferKey BUFFER_KEYS[] = {
      {"reduce_bucket_size", &ZeroBuffers::reduce_bucket_elems, &ELEMENTS},
      {"allgather_bucket_size", &ZeroBuffers::allgather_bucket_elems, &ELEMENTS},
      {"sub_group_size", &ZeroBuffers::sub_group_elems, &ELEMENTS},
      {"stage3_prefetch_bucket_size", &ZeroBuffers::prefetch_bucket_elems, &ELEMENTS_OR_ZERO},
      {"stage3_max_live_parameters", &ZeroBuffers::max_live_params, &ELEMENTS_OR_ZERO},
      {"stage3_max_reuse_distance", &ZeroBuffers::max_reuse_distance_elems, &ELEMENTS_OR_ZERO},
  };
  for (const auto& [key, field, range] : BUFFER_KEYS) {
    reject_auto(z, z.json(), key);
    if (auto v = z.optional_number(key, *range)) {
      in.buffers.*field = *v;
      in.buffers_set = true;
    }
  }
  if (auto v = z.optional_boolean("overlap_comm")) {
    in.buffers.overlap_comm = *v;
    in.buffers_set = true;
  }
  if (auto v = z.optional_boolean("reduce_scatter")) {
    in.buffers.reduce_scatter = *v;
    in.buffers_set = true;
    if (in.zero && *in.zero == 3) {
      in.no_effect.push_back(at(z, "reduce_scatter") +
                             " (the replay's ZeRO-3 reduce-scatters each bucket whatever it says: not modeled per "
                             "setting)");
    }
  }
  refuse_unmodeled_zero_variants(z, in);
  // deepspeed/runtime/zero/config.py at v0.16.5 defines each key and its default; file:line below
  // is where v0.16.5 reads it.
  mark_no_effect(
      z, in,
      {{"contiguous_gradients", "copies reduced gradients into one flat buffer: a memory layout, not modeled"},
       {"allgather_partitions", "v0.16.5 never reads it: runtime/engine.py:968 defines its getter and nothing calls it"},
       {"stage3_param_persistence_threshold",
        "the replay gathers a layer's small parameters (biases, norms) with its weights: under 0.1% of the bytes "
        "at hidden 1024 and up"},
       {"stage3_gather_16bit_weights_on_model_save", "model saving only; the step does not read it"},
       {"stage3_gather_fp16_weights_on_model_save", "model saving only; the step does not read it"},
       {"round_robin_gradients",
        "reorders which rank owns which gradient (zero/stage_1_and_2.py:337): the same bytes per rank"},
       {"elastic_checkpoint", "checkpoint file layout only; the step does not read it"},
       {"ignore_unused_parameters", "a check for parameters without gradients (zero/stage_1_and_2.py:1315)"},
       {"load_from_fp32_weights", "checkpoint loading only; the step does not read it"},
       {"memory_efficient_linear",
        "ZeRO-3's linear that keeps autograd from holding the gathered weight (zero/partition_parameters.py:555); "
        "the replay frees gathered weights after use, as with it on (the default); off is not modeled"},
       {"use_multi_rank_bucket_allreduce",
        "on (the default) all-reduces a stage 1-2 bucket per process group, off reduces it per destination rank "
        "(zero/stage_1_and_2.py:1136): not modeled per setting"},
       {"offload_param_nvme_path", "a swap folder: the profile's storage stands for its drive"}});
  z.finish();
}

}  // namespace

bool ModelOverrides::any() const {
  return layers || hidden || heads || kv_heads || ffn_hidden || vocab || seq_len || swiglu || rmsnorm ||
         untied_embeddings || no_biases || rotary || no_dropout || fp32_residual;
}

bool ModelOverrides::complete() const { return layers && hidden && heads; }

void StrategyInput::merge(const StrategyInput& later) {
  take(gpus, later.gpus);
  take(nodes, later.nodes);
  take(dp, later.dp);
  take(tp, later.tp);
  take(pp, later.pp);
  take(vpp, later.vpp);
  take(first_stage_layers, later.first_stage_layers);
  take(last_stage_layers, later.last_stage_layers);
  take(shards, later.shards);
  take(sp, later.sp);
  take(schedule, later.schedule);
  take(zero, later.zero);
  take(offload_params, later.offload_params);
  take(offload_optimizer, later.offload_optimizer);
  take(offload_activations, later.offload_activations);
  take(partition_activations, later.partition_activations);
  take(recompute, later.recompute);
  take(recompute_method, later.recompute_method);
  take(recompute_num_layers, later.recompute_num_layers);
  take(l2l, later.l2l);
  take(delayed_update, later.delayed_update);
  take(micro_batch, later.micro_batch);
  take(global_batch, later.global_batch);
  take(grad_accum, later.grad_accum);
  take(seq, later.seq);
  take(precision, later.precision);
  take(attention, later.attention);
  take(stack, later.stack);
  if (later.buffers_set) {
    buffers = later.buffers;
    buffers_set = true;
  }
  auto& m = model;
  const auto& l = later.model;
  take(m.layers, l.layers);
  take(m.hidden, l.hidden);
  take(m.heads, l.heads);
  take(m.kv_heads, l.kv_heads);
  take(m.ffn_hidden, l.ffn_hidden);
  take(m.vocab, l.vocab);
  take(m.seq_len, l.seq_len);
  take(m.swiglu, l.swiglu);
  take(m.rmsnorm, l.rmsnorm);
  take(m.untied_embeddings, l.untied_embeddings);
  take(m.no_biases, l.no_biases);
  take(m.rotary, l.rotary);
  take(m.no_dropout, l.no_dropout);
  take(m.fp32_residual, l.fp32_residual);
  no_effect.insert(no_effect.end(), later.no_effect.begin(), later.no_effect.end());
  notes.insert(notes.end(), later.notes.begin(), later.notes.end());
}

StrategyInput strategy_from_json(const std::string& path) { return strategy_from_json(parse_json_file(path)); }

StrategyInput strategy_from_json(const JsonDocument& doc) {
  StrictObject o(doc.json, doc.source, "");
  const auto version = o.integer("schema_version", 1, 1000);
  if (version != 1) throw ConfigError(doc.source, "schema_version", "schema version 1", std::to_string(version));
  StrategyInput in;
  read_int(o, "gpus", in.gpus, limits::GPUS);
  read_int(o, "nodes", in.nodes, limits::NODES);
  read_int(o, "dp", in.dp, limits::PARALLEL_DEGREE);
  read_int(o, "tp", in.tp, limits::PARALLEL_DEGREE);
  read_int(o, "pp", in.pp, limits::PARALLEL_DEGREE);
  read_int(o, "vpp", in.vpp, limits::PARALLEL_DEGREE);
  read_int(o, "first_stage_layers", in.first_stage_layers, limits::LAYERS);
  read_int(o, "last_stage_layers", in.last_stage_layers, limits::LAYERS);
  read_int(o, "shards", in.shards, limits::LAYERS);
  if (auto v = o.optional_boolean("sp")) in.sp.set(*v, at(o, "sp"));
  read_choice(o, "schedule", in.schedule, names::SCHEDULE);
  read_int(o, "zero", in.zero, IntLimit{0, 3});
  read_choice(o, "offload_params", in.offload_params, names::OFFLOAD);
  read_choice(o, "offload_optimizer", in.offload_optimizer, names::OFFLOAD);
  read_choice(o, "offload_activations", in.offload_activations, names::ACTIVATION_OFFLOAD);
  read_choice(o, "recompute", in.recompute, names::RECOMPUTE);
  if (auto v = o.optional_boolean("l2l")) in.l2l.set(*v, at(o, "l2l"));
  if (auto v = o.optional_boolean("delayed_update")) in.delayed_update.set(*v, at(o, "delayed_update"));
  read_int(o, "micro_batch", in.micro_batch, limits::MICRO_BATCH);
  read_int(o, "global_batch", in.global_batch, limits::GLOBAL_BATCH);
  read_int(o, "seq", in.seq, limits::SEQ);
  read_choice(o, "precision", in.precision, names::NUMERICS);
  read_choice(o, "attention", in.attention, names::ATTENTION);
  read_stack(o, in);
  o.finish();
  return in;
}

StrategyInput strategy_from_deepspeed(const std::string& path) {
  return strategy_from_deepspeed(parse_json_file(path));
}

StrategyInput strategy_from_deepspeed(const JsonDocument& doc) {
  StrictObject o(doc.json, doc.source, "");
  StrategyInput in;
  for (auto key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}) {
    reject_auto(o, doc.json, key);
  }
  read_int(o, "train_batch_size", in.global_batch, limits::GLOBAL_BATCH);
  read_int(o, "train_micro_batch_size_per_gpu", in.micro_batch, limits::MICRO_BATCH);
  read_int(o, "gradient_accumulation_steps", in.grad_accum, limits::GRAD_ACCUM);
  bool fp16 = false, bf16 = false;
  if (auto f = o.optional_object("fp16")) {
    fp16 = f->optional_boolean("enabled").value_or(false);
    const std::string_view LOSS_SCALING = "loss scaling: numerics, not the step's work";
    mark_no_effect(*f, in,
                   {{"loss_scale", LOSS_SCALING},
                    {"initial_scale_power", LOSS_SCALING},
                    {"loss_scale_window", LOSS_SCALING},
                    {"hysteresis", LOSS_SCALING},
                    {"consecutive_hysteresis", LOSS_SCALING},
                    {"min_loss_scale", LOSS_SCALING},
                    {"auto_cast", "casts the model's inputs to fp16: inputs are not modeled"}});
    refuse_unless_default(*f, in, "fp16_master_weights_and_grads", false,
                          "fp16 master weights and gradients change the optimizer's memory");
    f->finish();
  }
  if (auto b = o.optional_object("bf16")) {
    bf16 = b->optional_boolean("enabled").value_or(false);
    b->finish();
  }
  if (fp16 && bf16) throw ConfigError(doc.source, "bf16.enabled", "fp16 or bf16, not both", "both enabled");
  in.precision.set(fp16 ? Numerics::FP16_MIXED : bf16 ? Numerics::BF16_MIXED : Numerics::FP32,
                   doc.source + ": fp16/bf16");
  if (auto z = o.optional_object("zero_optimization")) read_zero(*z, in);
  if (auto a = o.optional_object("activation_checkpointing")) {
    // The block configures deepspeed.checkpointing, which the model code calls for every layer:
    // we take its presence as full recompute, and cpu_checkpointing as checkpoints on the CPU.
    in.recompute.set(Recompute::FULL, at(o, "activation_checkpointing"));
    in.notes.push_back(doc.source + ": activation_checkpointing present: assuming every layer is checkpointed");
    if (a->optional_boolean("cpu_checkpointing").value_or(false)) {
      in.offload_activations.set(ActivationOffload::CPU, at(*a, "cpu_checkpointing"));
    }
    if (auto p = a->optional_boolean("partition_activations")) {
      in.partition_activations.set(*p, at(*a, "partition_activations"));
    }
    mark_no_effect(*a, in,
                   {{"contiguous_memory_optimization",
                     "copies checkpoints into one preallocated buffer: a memory layout, not modeled"},
                    {"number_checkpoints", "sizes the contiguous_memory_optimization buffer: not modeled"},
                    {"synchronize_checkpoint_boundary", "a device synchronize per checkpoint: not modeled"},
                    {"profile", "profiling only"}});
    a->finish();
  }
  if (auto amp = o.optional_object("amp")) {
    if (amp->optional_boolean("enabled").value_or(false)) {
      throw ConfigError(doc.source, "amp.enabled", "false (NVIDIA Apex AMP is not modeled; use fp16 or bf16)", "true");
    }
    amp->finish({"opt_level"});
  }
  const std::string_view LOGGING = "logging or profiling only";
  mark_no_effect(
      o, in,
      {{"optimizer", "trainsim costs Adam's states and step whatever the type; other optimizers are not modeled"},
       {"scheduler", "the learning-rate schedule: numerics only"},
       {"gradient_clipping", "the gradient norm's small reduction and scaling pass: not modeled"},
       {"steps_per_print", LOGGING},
       {"wall_clock_breakdown", LOGGING},
       {"prescale_gradients", "scales gradients before or after the reduction: the same bytes"},
       {"gradient_predivide_factor", "scales gradients before or after the reduction: the same bytes"},
       {"zero_allow_untested_optimizer", "a check on the client optimizer only"},
       {"aio", "the NVMe swapper's libaio settings: the profile's storage rates stand for what they achieve"},
       {"flops_profiler", LOGGING},
       {"tensorboard", LOGGING},
       {"wandb", LOGGING},
       {"csv_monitor", LOGGING},
       {"comms_logger", LOGGING},
       {"communication_data_type",
        "the replay reduces in the training dtype, DeepSpeed's default; other values are not modeled"},
       {"memory_breakdown", LOGGING},
       {"dump_state", LOGGING},
       {"zero_force_ds_cpu_optimizer", "a check that the offloaded optimizer is DeepSpeed's CPU Adam"},
       {"checkpoint", "checkpoint saving and loading only"},
       {"data_types", "the gradient accumulation dtype: the stack's default is modeled, other values are not"},
       {"sparse_gradients", "sparse embedding gradients: not modeled"},
       {"elasticity", "chooses batch sizes for elastic jobs: the batch keys given are used"},
       {"autotuning", "the autotuner's search settings only"},
       {"compression_training", "compression training: not modeled"},
       {"seed", "the random seed: numerics only"}});
  o.finish();
  return in;
}

}  // namespace trainsim::wl
