// Defaults and cross-field checks: from what the user said to a Strategy we can run.
#include <fmt/format.h>

#include <algorithm>

#include "config_error.hpp"
#include "enum_names.hpp"
#include "model_loader.hpp"
#include "stack_capabilities.hpp"
#include "stage_partition.hpp"
#include "strategy_input.hpp"
#include "strategy_rules.hpp"

namespace trainsim::wl {
namespace {

template <class T>
T value_or(const Setting<T>& s, T fallback) {
  return s ? *s : fallback;
}

// The origin of a setting, or the name of the flag that would set it when a default was used.
template <class T>
std::string origin_or(const Setting<T>& s, std::string flag) {
  return s ? s.origin : flag + " (default)";
}

[[noreturn]] void fail(const std::string& origin, std::string expected, std::string got) {
  // Origins look like "--tp" or "file.json: key"; split the file from the key where we can.
  const auto colon = origin.find(": ");
  if (colon != std::string::npos) {
    throw ConfigError(origin.substr(0, colon), origin.substr(colon + 2), std::move(expected), std::move(got));
  }
  throw ConfigError(origin, origin, std::move(expected), std::move(got));
}

// The flag or file key that set a field (or the flag that would have, for a default).
std::string origin_of(const StrategyInput& in, Field f) {
  switch (f) {
    case Field::GPUS: return origin_or(in.gpus, in.nodes ? in.nodes.origin : "--gpus");
    case Field::DP: return origin_or(in.dp, "--dp");
    case Field::TP: return origin_or(in.tp, "--tp");
    case Field::PP: return origin_or(in.pp, "--pp");
    case Field::VPP: return origin_or(in.vpp, "--vpp");
    case Field::FIRST_STAGE_LAYERS:
      return in.first_stage_layers ? in.first_stage_layers.origin : origin_or(in.last_stage_layers, "--pp");
    case Field::SP: return origin_or(in.sp, "--sp");
    case Field::SCHEDULE: return origin_or(in.schedule, "--schedule");
    case Field::ZERO: return origin_or(in.zero, "--zero");
    case Field::OFFLOAD_PARAMS: return origin_or(in.offload_params, "--offload-params");
    case Field::OFFLOAD_OPTIMIZER: return origin_or(in.offload_optimizer, "--offload-optimizer");
    case Field::OFFLOAD_ACTIVATIONS: return origin_or(in.offload_activations, "--offload-activations");
    case Field::RECOMPUTE: return origin_or(in.recompute, "--recompute");
    case Field::L2L: return origin_or(in.l2l, "--l2l");
    case Field::DELAYED_UPDATE: return origin_or(in.delayed_update, "--dpu");
    case Field::SHARDS: return origin_or(in.shards, "--shards");
    case Field::MICRO_BATCH: return origin_or(in.micro_batch, "--micro-batch");
    case Field::GLOBAL_BATCH: return origin_or(in.global_batch, "--global-batch");
    case Field::SEQ: return origin_or(in.seq, "--seq");
    case Field::MODEL: return "--model";
  }
  return "--strategy";
}

}  // namespace

namespace {

// A model argument given beside a --model must say what the model already is: trainsim will
// not quietly train gpt2-1.5b's name with a 175B architecture.
template <class T>
void check_agrees(const Setting<T>& given, T model_value, const ModelSpec& base, const std::string& what) {
  if (!given || *given == model_value) return;
  fail(given.origin,
       fmt::format("{} as {} has it ({}), or no --model to take the architecture from the arguments alone", what,
                   base.name, model_value),
       fmt::format("{}", *given));
}

void check_overrides_agree(const ModelOverrides& o, const ModelSpec& m) {
  check_agrees(o.layers, m.layers, m, "the layer count");
  check_agrees(o.hidden, m.hidden, m, "the hidden size");
  check_agrees(o.heads, m.heads, m, "the attention heads");
  check_agrees(o.kv_heads, m.kv_heads, m, "the key/value heads");
  check_agrees(o.ffn_hidden, m.ffn_hidden, m, "the MLP hidden size");
  check_agrees(o.vocab, m.vocab, m, "the vocabulary");
  check_agrees(o.seq_len, m.seq_len, m, "the position table");
  check_agrees(o.swiglu, m.mlp == MlpKind::SWIGLU, m, "SwiGLU");
  check_agrees(o.rmsnorm, m.norm == NormKind::RMSNORM, m, "RMSNorm");
  check_agrees(o.untied_embeddings, !m.tied_embeddings, m, "untied embeddings");
  check_agrees(o.no_biases, !m.biases, m, "no linear biases");
  check_agrees(o.rotary, m.position == PositionKind::ROTARY, m, "rotary positions");
  check_agrees(o.no_dropout, !m.dropout, m, "no dropout");
  check_agrees(o.fp32_residual, m.fp32_residual, m, "an fp32 residual stream");
}

}  // namespace

ModelSpec apply_model_overrides(const ModelOverrides& o, std::optional<ModelSpec> base, int tp_for_vocab_padding) {
  if (base) {
    check_overrides_agree(o, *base);
    return *base;
  }
  ModelSpec m;
  m.name = "megatron-args";
  m.description = "model given by Megatron-LM arguments";
  m.origin = o.layers.origin.substr(0, o.layers.origin.find(':'));
  m.seq_len = 0;
  m.layers = *o.layers;
  m.hidden = *o.hidden;
  m.heads = *o.heads;
  m.kv_heads = o.kv_heads ? *o.kv_heads : m.heads;
  // Megatron's default MLP width: 4h, or 4h * 2/3 for SwiGLU (arguments.py).
  const bool swiglu = o.swiglu && *o.swiglu;
  m.ffn_hidden = o.ffn_hidden ? *o.ffn_hidden : (swiglu ? (4 * m.hidden * 2 / 3) : 4 * m.hidden);
  if (o.seq_len) m.seq_len = *o.seq_len;
  if (o.vocab) {
    m.vocab = *o.vocab;
  } else {
    // Megatron pads the GPT-2 BPE vocabulary (50257) to a multiple of 128 * tp.
    const std::int64_t multiple = 128LL * tp_for_vocab_padding;
    m.vocab = (50257 + multiple - 1) / multiple * multiple;
  }
  if (o.swiglu) m.mlp = *o.swiglu ? MlpKind::SWIGLU : MlpKind::GELU;
  if (o.rmsnorm) m.norm = *o.rmsnorm ? NormKind::RMSNORM : NormKind::LAYERNORM;
  if (o.untied_embeddings) m.tied_embeddings = !*o.untied_embeddings;
  if (o.no_biases) m.biases = !*o.no_biases;
  if (o.rotary) m.position = *o.rotary ? PositionKind::ROTARY : PositionKind::LEARNED;
  if (o.no_dropout) m.dropout = !*o.no_dropout;
  if (o.fp32_residual) m.fp32_residual = *o.fp32_residual;
  validate_model(m, "--megatron-args");
  return m;
}

// What each stack can run (stack_capabilities.hpp), as an error naming where the stack was given.
static void check_stack(const Strategy& s, const StrategyInput& in, const ModelSpec& model) {
  if (auto refusal = stack_cannot_run(s, model)) fail(in.stack.origin, refusal->expected, refusal->got);
}

// Megatron-LM's --recompute-method block N recomputes the first N layers of each pipeline chunk
// and stores every activation of the rest (megatron/core/transformer/transformer_block.py,
// _checkpointed_forward). trainsim models full recompute of every layer only, so N must reach the
// layers of the largest chunk; below that the answer would be the wrong one, and it is refused.
static void check_block_recompute(const StrategyInput& in, const ModelSpec& model, const Strategy& s, ResolvedInputs& out) {
  if (!in.recompute_method || *in.recompute_method != "block" || !in.recompute_num_layers) return;
  if (s.recompute != Recompute::FULL || !model.has_architecture()) return;
  const StagePartition partition = partition_stages(model, s);
  int largest = 0;
  for (int vs = 0; vs < partition.virtual_stages(); ++vs) largest = std::max(largest, partition.layer_count(vs));
  if (*in.recompute_num_layers < largest) {
    fail(in.recompute_num_layers.origin,
         fmt::format("at least the {} layers of the largest pipeline chunk ({}) with --recompute-method block: block N "
                     "recomputes only the first N layers of a chunk and stores every activation of the others "
                     "(Megatron-LM's transformer_block.py), which trainsim does not model",
                     largest, partition.describe()),
         std::to_string(*in.recompute_num_layers));
  }
  out.notes.push_back(fmt::format("{}: --recompute-method block {} covers every layer of each chunk ({}): every "
                                  "layer checkpointed and recomputed on its own, as modeled",
                                  in.recompute_method.origin.substr(0, in.recompute_method.origin.find(": ")),
                                  *in.recompute_num_layers, largest));
}

ResolvedInputs resolve_inputs(const StrategyInput& in, ModelSpec model, const ClusterShape& cluster) {
  ResolvedInputs out;
  out.notes = in.notes;
  out.notes.insert(out.notes.end(), model.notes.begin(), model.notes.end());
  out.no_effect = in.no_effect;
  Strategy s;
  if (in.precision) model.numerics = *in.precision;
  if (in.attention) model.attention = *in.attention;

  s.tp = value_or(in.tp, 1);
  s.pp = value_or(in.pp, 1);
  s.vpp = value_or(in.vpp, 1);
  s.sp = value_or(in.sp, false);
  s.zero_stage = value_or(in.zero, 0);
  s.offload_params = value_or(in.offload_params, OffloadTarget::NONE);
  s.offload_optimizer = value_or(in.offload_optimizer, OffloadTarget::NONE);
  s.offload_activations = value_or(in.offload_activations, ActivationOffload::NONE);
  s.recompute = value_or(in.recompute, Recompute::NONE);
  s.partition_activations = value_or(in.partition_activations, false);
  s.l2l = value_or(in.l2l, false);
  s.delayed_update = value_or(in.delayed_update, false);
  s.buffers = in.buffers;

  // GPUs and nodes: either may be given; the other follows from the node size.
  const int gpn = cluster.gpus_per_node;
  if (in.gpus && in.nodes) {
    if (*in.gpus > *in.nodes * gpn || *in.gpus <= (*in.nodes - 1) * gpn) {
      fail(in.gpus.origin,
           fmt::format("a GPU count that needs exactly {} nodes of {} GPUs ({}), i.e. {}..{}", *in.nodes, gpn,
                       in.nodes.origin, (*in.nodes - 1) * gpn + 1, *in.nodes * gpn),
           std::to_string(*in.gpus));
    }
    s.gpus = *in.gpus;
    s.nodes = *in.nodes;
  } else if (in.gpus) {
    s.gpus = *in.gpus;
    s.nodes = (s.gpus + gpn - 1) / gpn;
  } else if (in.nodes) {
    s.nodes = *in.nodes;
    s.gpus = s.nodes * gpn;
  } else if (in.dp) {
    s.gpus = *in.dp * s.tp * s.pp;
    s.nodes = (s.gpus + gpn - 1) / gpn;
  } else {
    s.gpus = gpn;
    s.nodes = 1;
    out.notes.push_back(fmt::format("no --gpus or --nodes: one node of {} ({} GPUs)", printable(cluster.name), gpn));
  }

  const int model_parallel = s.tp * s.pp;
  if (in.dp) {
    s.dp = *in.dp;
    if (s.dp * model_parallel != s.gpus) {
      fail(in.dp.origin,
           fmt::format("dp x tp x pp = GPUs: {} x {} x {} = {} but the GPU count is {} ({})", s.dp, s.tp, s.pp,
                       s.dp * model_parallel, s.gpus, origin_or(in.gpus, in.nodes ? in.nodes.origin : "--gpus")),
           std::to_string(s.dp));
    }
  } else {
    if (s.gpus % model_parallel != 0) {
      fail(origin_or(in.tp.value ? in.tp : in.pp, "--tp"),
           fmt::format("tp x pp ({} x {} = {}) dividing the GPU count {}", s.tp, s.pp, model_parallel, s.gpus),
           std::to_string(model_parallel));
    }
    s.dp = s.gpus / model_parallel;
  }

  const bool raw = !model.has_architecture();
  s.first_stage_layers = value_or(in.first_stage_layers, 0);
  s.last_stage_layers = value_or(in.last_stage_layers, 0);
  // Pipeline schedule: interleaving needs virtual stages and vice versa (checked below).
  s.schedule = value_or(in.schedule, s.vpp > 1 ? Schedule::INTERLEAVED : Schedule::ONE_F_ONE_B);
  // Hydra's shards: one per layer unless given (the rules check the range, and that only Hydra
  // has shards).
  if (s.schedule == Schedule::HYDRA) {
    s.shards = value_or(in.shards, static_cast<int>(model.layers));
  } else {
    s.shards = value_or(in.shards, 0);
  }
  if (s.sp && s.tp == 1) out.notes.push_back("sequence parallelism has no effect with tp = 1");
  if (in.stack) {
    s.stack = *in.stack;
    check_stack(s, in, model);
  }

  // Batch shape.
  s.seq = value_or(in.seq, raw ? std::int64_t{0} : model.seq_len);
  s.micro_batch = value_or(in.micro_batch, std::int64_t{1});
  const std::int64_t per_step = s.micro_batch * s.dp;
  if (in.global_batch) {
    s.global_batch = *in.global_batch;
    if (in.grad_accum && s.global_batch % per_step == 0 && s.global_batch != per_step * *in.grad_accum) {
      fail(in.grad_accum.origin,
           fmt::format("train_batch_size = micro-batch x accumulation x dp ({} x {} x {} = {})", s.micro_batch,
                       *in.grad_accum, s.dp, per_step * *in.grad_accum),
           std::to_string(s.global_batch));
    }
  } else if (in.grad_accum) {
    s.global_batch = per_step * *in.grad_accum;
  } else {
    // Default: one micro-batch per pipeline stage, so a pipeline fills (m = pp).
    s.global_batch = per_step * s.pp;
  }

  // Every cross-field rule, from the one list the planner also uses (strategy_rules.hpp); the
  // first violation names the flag or file key that set the field at fault.
  const std::vector<RuleViolation> broken = validate(model, s);
  if (!broken.empty()) {
    const RuleViolation& v = broken.front();
    fail(origin_of(in, v.field), v.expected, v.got);
  }

  check_block_recompute(in, model, s, out);

  if (s.nodes > cluster.node_count) {
    out.infeasible_reason = fmt::format("the cluster {} has {} nodes; this configuration needs {}", printable(cluster.name),
                                        cluster.node_count, s.nodes);
  }
  out.model = std::move(model);
  out.strategy = s;
  return out;
}

}  // namespace trainsim::wl
