#pragma once
// A strategy as the user gave it: every field optional and remembering where it came from, so a
// cross-field error can name the flag or file key at fault. Sources are merged in order
// (strategy file, DeepSpeed config, Megatron arguments, then flags: flags override files) and
// then resolved against the model and the cluster's shape.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy.hpp"
#include "strict_json.hpp"

namespace trainsim::wl {

template <class T>
struct Setting {
  std::optional<T> value;
  std::string origin;  // "--tp", "ds_config.json: zero_optimization.stage", ...

  void set(T v, std::string from) {
    value = std::move(v);
    origin = std::move(from);
  }
  explicit operator bool() const { return value.has_value(); }
  const T& operator*() const { return *value; }
};

// Model fields that Megatron-LM arguments can carry (--num-layers, --hidden-size, ...).
struct ModelOverrides {
  Setting<std::int64_t> layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len;
  Setting<bool> swiglu, rmsnorm, untied_embeddings, no_biases, rotary, no_dropout, fp32_residual;
  bool any() const;
  bool complete() const;  // enough to build a model without --model
};

struct StrategyInput {
  Setting<int> gpus, nodes, dp, tp, pp, vpp, first_stage_layers, last_stage_layers, shards;
  Setting<bool> sp;
  Setting<Schedule> schedule;
  Setting<int> zero;
  Setting<OffloadTarget> offload_params, offload_optimizer;
  Setting<ActivationOffload> offload_activations;
  Setting<bool> partition_activations;  // ds_config activation_checkpointing.partition_activations
  Setting<Recompute> recompute;
  // Megatron-LM's --recompute-method ("block" or "uniform") and --recompute-num-layers, under full
  // recompute: checked against the stage partition in resolve_inputs, since only the choices
  // that recompute every layer are modeled.
  Setting<std::string> recompute_method;
  Setting<std::int64_t> recompute_num_layers;
  Setting<bool> l2l, delayed_update;
  Setting<std::int64_t> micro_batch, global_batch, grad_accum, seq;
  Setting<Numerics> precision;
  Setting<AttentionImpl> attention;
  Setting<TrainingStack> stack;
  ZeroBuffers buffers;
  bool buffers_set = false;
  ModelOverrides model;
  // Keys a source carries that are understood but do not change what trainsim computes
  // (a learning rate, a data path): reported back in the answer, never silently dropped.
  std::vector<std::string> no_effect;
  std::vector<std::string> notes;  // assumptions made while reading a source

  // Fields set in `later` replace ours.
  void merge(const StrategyInput& later);
};

StrategyInput strategy_from_json(const std::string& path);
StrategyInput strategy_from_json(const JsonDocument& doc);
StrategyInput strategy_from_deepspeed(const std::string& path);
StrategyInput strategy_from_deepspeed(const JsonDocument& doc);
// `--megatron-args "--tensor-model-parallel-size 8 ..."`.
StrategyInput strategy_from_megatron_args(const std::string& args, const std::string& flag = "--megatron-args");

// The cluster facts resolution needs (kept free of hwprofiles, which workloads may not use).
struct ClusterShape {
  int gpus_per_node = 1;
  int node_count = 1;
  std::string name;
};

struct ResolvedInputs {
  ModelSpec model;
  Strategy strategy;
  std::optional<std::string> infeasible_reason;  // well formed, but cannot run on this cluster
  std::vector<std::string> notes;
  std::vector<std::string> no_effect;
};

// Applies defaults and every cross-field check. Throws ConfigError naming the origin of the
// offending field; returns an infeasible reason for a valid request the cluster cannot host.
ResolvedInputs resolve_inputs(const StrategyInput& input, ModelSpec model, const ClusterShape& cluster);

// Builds a model from Megatron arguments alone, or applies them over a given model.
ModelSpec apply_model_overrides(const ModelOverrides& o, std::optional<ModelSpec> base, int tp_for_vocab_padding);

}  // namespace trainsim::wl
