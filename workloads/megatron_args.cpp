// Megatron-LM command-line arguments (megatron/training/arguments.py) as a strategy source.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <iterator>
#include <set>
#include <string_view>
#include <vector>

#include "config_error.hpp"
#include "enum_names.hpp"
#include "limits.hpp"
#include "strategy_input.hpp"

namespace trainsim::wl {
namespace {

struct Args {
  std::vector<std::string> tokens;
  std::size_t next = 0;
  std::string flag;  // --megatron-args

  bool done() const { return next >= tokens.size(); }
  std::string value_of(const std::string& name) {
    if (next >= tokens.size() || tokens[next].rfind("--", 0) == 0) {
      throw ConfigError(flag, name, "a value after " + name, "nothing");
    }
    return tokens[next++];
  }
  std::int64_t integer_of(const std::string& name, const IntLimit& limit) {
    const std::string text = value_of(name);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || !limit.contains(v)) {
      throw ConfigError(flag, name, limit.text(), "\"" + text + "\"");
    }
    return v;
  }
  double number_of(const std::string& name) {
    const std::string text = value_of(name);
    try {
      std::size_t used = 0;
      const double v = std::stod(text, &used);
      if (used == text.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    throw ConfigError(flag, name, "a number", "\"" + text + "\"");
  }
};

// Arguments that take a value but do not change what trainsim computes.
constexpr std::string_view NO_EFFECT_WITH_VALUE[] = {
    "--lr", "--min-lr", "--lr-decay-style", "--lr-warmup-fraction", "--lr-warmup-iters", "--lr-decay-iters",
    "--lr-decay-samples", "--lr-warmup-samples", "--train-iters", "--train-samples", "--weight-decay", "--clip-grad",
    "--adam-beta1", "--adam-beta2", "--adam-eps", "--init-method-std", "--log-interval", "--save-interval",
    "--eval-interval", "--eval-iters", "--save", "--load", "--data-path", "--vocab-file", "--merge-file",
    "--tokenizer-type", "--tokenizer-model", "--split", "--distributed-backend", "--seed", "--tensorboard-dir",
    "--make-vocab-size-divisible-by", "--DDP-impl", "--num-workers", "--data-impl", "--loss-scale",
    "--initial-loss-scale", "--min-loss-scale", "--loss-scale-window", "--hysteresis", "--transformer-impl",
    "--optimizer", "--exit-interval", "--wandb-project", "--distributed-timeout-minutes", "--rotary-percent",
    "--attention-softmax-in-fp32-dummy", "--norm-epsilon",
    "--num-dataset-builder-threads", "--ckpt-format", "--data-cache-path"};
// Switches (no value) that do not change what trainsim computes.
constexpr std::string_view NO_EFFECT_SWITCHES[] = {
    "--no-masked-softmax-fusion", "--no-bias-gelu-fusion", "--no-bias-dropout-fusion", "--overlap-grad-reduce",
    "--overlap-param-gather", "--use-mcore-models", "--no-gradient-accumulation-fusion",
    "--accumulate-allreduce-grads-in-fp32", "--log-num-zeros-in-grad", "--attention-softmax-in-fp32",
    "--no-async-tensor-model-parallel-allreduce", "--use-cpu-initialization", "--log-params-norm",
    "--log-throughput", "--tp-comm-overlap", "--no-load-optim", "--no-load-rng", "--bf16-reduce", "--mock-data",
    "--distribute-saved-activations", "--apply-query-key-layer-scaling", "--use-contiguous-buffers-in-local-ddp"};

// Arguments that set what trainsim computes (strategy_from_megatron_args reads each). An argument in
// none of the three lists is refused with the closest known one as a suggestion.
constexpr std::string_view MODELED[] = {
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--virtual-pipeline-model-parallel-size",
    "--num-layers-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--sequence-parallel", "--micro-batch-size", "--global-batch-size", "--seq-length", "--num-layers", "--hidden-size",
    "--num-attention-heads", "--num-query-groups", "--ffn-hidden-size", "--max-position-embeddings", "--vocab-size", "--fp16",
    "--bf16", "--recompute-activations", "--checkpoint-activations", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--use-flash-attn", "--use-distributed-optimizer", "--untie-embeddings-and-output-weights",
    "--swiglu", "--disable-bias-linear", "--group-query-attention", "--fp32-residual-connection", "--normalization",
    "--position-embedding-type", "--attention-dropout", "--hidden-dropout"};

template <std::size_t N>
bool contains(const std::string_view (&list)[N], const std::string& s) {
  for (auto item : list) {
    if (item == s) return true;
  }
  return false;
}

// Splits the argument text as a POSIX shell would (single quotes literal, double quotes with
// backslash escapes, backslash outside quotes), without expansion: "--data-path 'a b'" is two
// arguments. "--tp=8" becomes "--tp" "8", as argparse reads it.
std::vector<std::string> split_args(const std::string& text, const std::string& flag) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
      else word += c;
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && std::string_view("\"\\$`").find(text[i + 1]) != std::string_view::npos) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw ConfigError(flag, flag, "a character after the final backslash", "the end of the text");
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      ++i;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    throw ConfigError(flag, flag, fmt::format("a closing {} quote", quote == '"' ? "double" : "single"),
                      "the end of the text");
  }
  if (in_word) words.push_back(std::move(word));
  std::vector<std::string> out;
  for (auto& w : words) {
    const auto eq = w.find('=');
    if (w.rfind("--", 0) == 0 && eq != std::string::npos) {
      out.push_back(w.substr(0, eq));
      out.push_back(w.substr(eq + 1));
    } else {
      out.push_back(std::move(w));
    }
  }
  return out;
}

// --recompute-method and --recompute-num-layers as Megatron-LM reads them (tag core_v0.16.1:
// megatron/core/transformer/transformer_config.py __post_init__, lines 1161-1184, refuses a method
// or a layer count with selective granularity and needs both with full; transformer_block.py,
// _checkpointed_forward, recomputes by them).
// trainsim models full recompute as every layer's input checkpointed and the layer recomputed on
// its own: "uniform 1", or "block N" with N at least the layers of every pipeline chunk (checked
// in resolve_inputs, where the partition is known). "uniform N > 1" (one checkpoint per group of N
// layers, the group recomputed at once) and "block N" below that (the first N layers of each chunk
// recomputed, the rest storing every activation) change the memory and the time differently and
// are refused rather than answered as if every layer were recomputed alone.
void check_recompute_method(StrategyInput& in, const std::string& flag, bool full_granularity) {
  // Megatron-LM tag core_v0.16.1, megatron/core/transformer/transformer_config.py __post_init__,
  // lines 1166-1170: `--recompute-granularity full` without a method raises ValueError ('Using
  // recompute_granularity: full so recompute_method must be "block" or "uniform"'), before it looks
  // at the layer count. --checkpoint-activations, which never sets the granularity, is not refused
  // here.
  if (full_granularity && !in.recompute_method) {
    throw ConfigError(flag, "--recompute-method",
                      "--recompute-method \"block\" or \"uniform\" with --recompute-granularity full (Megatron-LM's "
                      "transformer_config.py refuses full granularity without one); add --recompute-method uniform "
                      "--recompute-num-layers 1 to recompute every layer, the full recompute trainsim models",
                      "--recompute-granularity full without --recompute-method");
  }
  if (!in.recompute_method && !in.recompute_num_layers) return;
  const std::string given = in.recompute_method ? "--recompute-method" : "--recompute-num-layers";
  if (!in.recompute) {
    // Without a granularity Megatron-LM recomputes nothing and never reads the two.
    if (in.recompute_method) in.no_effect.push_back(in.recompute_method.origin + " (no --recompute-granularity)");
    if (in.recompute_num_layers) in.no_effect.push_back(in.recompute_num_layers.origin + " (no --recompute-granularity)");
    in.recompute_method = {};
    in.recompute_num_layers = {};
    return;
  }
  if (*in.recompute == Recompute::SELECTIVE) {
    throw ConfigError(flag, given,
                      "no --recompute-method or --recompute-num-layers with selective recompute (Megatron-LM refuses "
                      "them: arguments.py and transformer_config.py)",
                      given + " with " + in.recompute.origin.substr(in.recompute.origin.find(": ") + 2));
  }
  if (!in.recompute_method || !in.recompute_num_layers) {
    throw ConfigError(flag, in.recompute_method ? "--recompute-num-layers" : "--recompute-method",
                      "--recompute-method and --recompute-num-layers together (Megatron-LM's transformer_config.py "
                      "needs both under full recompute)",
                      "only " + given);
  }
  if (*in.recompute_method == "uniform" && *in.recompute_num_layers != 1) {
    throw ConfigError(flag, "--recompute-num-layers",
                      "1 with --recompute-method uniform (uniform N checkpoints the input of each group of N layers "
                      "and recomputes the group at once, megatron/core/transformer/transformer_block.py; groups of "
                      "more than one layer are not modeled)",
                      std::to_string(*in.recompute_num_layers));
  }
  if (*in.recompute_method == "uniform") {
    in.notes.push_back(flag + ": --recompute-method uniform --recompute-num-layers 1: every layer checkpointed and "
                              "recomputed on its own, as modeled");
  }
}

}  // namespace

StrategyInput strategy_from_megatron_args(const std::string& text, const std::string& flag) {
  Args a{split_args(text, flag), 0, flag};
  std::set<std::string> seen;
  StrategyInput in;
  std::optional<std::int64_t> layers_per_virtual_stage;
  bool full_granularity = false, recompute_activations = false;
  auto origin = [&](const std::string& name) { return flag + ": " + name; };
  while (!a.done()) {
    const std::string name = a.tokens[a.next++];
    if (name.rfind("--", 0) != 0) {
      throw ConfigError(flag, name, "an argument starting with --", "the stray value \"" + name + "\"");
    }
    // argparse keeps the last of a repeated argument; a command line that says two things is
    // more likely a mistake than a wish, so we ask which one is meant.
    if (!seen.insert(name).second) throw ConfigError(flag, name, "each argument once", name + " twice");
    if (!contains(MODELED, name) && !contains(NO_EFFECT_WITH_VALUE, name) && !contains(NO_EFFECT_SWITCHES, name)) {
      std::vector<std::string_view> known(std::begin(MODELED), std::end(MODELED));
      known.insert(known.end(), std::begin(NO_EFFECT_WITH_VALUE), std::end(NO_EFFECT_WITH_VALUE));
      known.insert(known.end(), std::begin(NO_EFFECT_SWITCHES), std::end(NO_EFFECT_SWITCHES));
      throw ConfigError(flag, name, "a Megatron-LM argument trainsim knows (see workloads/README.md: Megatron-LM arguments)",
                        "the unknown argument \"" + name + "\"" + did_you_mean(name, known));
    }
    auto set_int = [&](Setting<int>& s, const IntLimit& limit) {
      s.set(static_cast<int>(a.integer_of(name, limit)), origin(name));
    };
    auto set_i64 = [&](Setting<std::int64_t>& s, const IntLimit& limit) { s.set(a.integer_of(name, limit), origin(name)); };
    if (name == "--tensor-model-parallel-size") set_int(in.tp, limits::PARALLEL_DEGREE);
    else if (name == "--pipeline-model-parallel-size") set_int(in.pp, limits::PARALLEL_DEGREE);
    else if (name == "--virtual-pipeline-model-parallel-size") set_int(in.vpp, limits::PARALLEL_DEGREE);
    else if (name == "--num-layers-per-virtual-pipeline-stage") layers_per_virtual_stage = a.integer_of(name, limits::LAYERS);
    else if (name == "--decoder-first-pipeline-num-layers") set_int(in.first_stage_layers, limits::LAYERS);
    else if (name == "--decoder-last-pipeline-num-layers") set_int(in.last_stage_layers, limits::LAYERS);
    else if (name == "--sequence-parallel") in.sp.set(true, origin(name));
    else if (name == "--micro-batch-size") set_i64(in.micro_batch, limits::MICRO_BATCH);
    else if (name == "--global-batch-size") set_i64(in.global_batch, limits::GLOBAL_BATCH);
    else if (name == "--seq-length") set_i64(in.seq, limits::SEQ);
    else if (name == "--num-layers") set_i64(in.model.layers, limits::LAYERS);
    else if (name == "--hidden-size") set_i64(in.model.hidden, limits::HIDDEN);
    else if (name == "--num-attention-heads") set_i64(in.model.heads, limits::HEADS);
    else if (name == "--num-query-groups") set_i64(in.model.kv_heads, limits::HEADS);
    else if (name == "--ffn-hidden-size") set_i64(in.model.ffn_hidden, limits::FFN_HIDDEN);
    else if (name == "--max-position-embeddings") set_i64(in.model.seq_len, limits::SEQ);
    else if (name == "--vocab-size") set_i64(in.model.vocab, limits::VOCAB);
    else if (name == "--fp16" || name == "--bf16") {
      // megatron/training/arguments.py (validate_args), tag core_v0.16.1, lines 702-703:
      // `if args.fp16: assert not args.bf16`.
      if (in.precision) {
        throw ConfigError(flag, name, "either --fp16 or --bf16, not both (Megatron-LM's arguments.py asserts it)",
                          "both");
      }
      in.precision.set(name == "--fp16" ? Numerics::FP16_MIXED : Numerics::BF16_MIXED, origin(name));
    }
    else if (name == "--recompute-activations") {
      in.recompute.set(Recompute::SELECTIVE, origin(name));
      recompute_activations = true;
    }
    else if (name == "--checkpoint-activations") in.recompute.set(Recompute::FULL, origin(name));
    else if (name == "--recompute-granularity") {
      const std::string v = a.value_of(name);
      if (v == "full") {
        in.recompute.set(Recompute::FULL, origin(name));
        full_granularity = true;
      } else if (v == "selective") in.recompute.set(Recompute::SELECTIVE, origin(name));
      else throw ConfigError(flag, name, "\"full\" or \"selective\"", "\"" + v + "\"");
    } else if (name == "--recompute-method") {
      const std::string v = a.value_of(name);
      if (v != "block" && v != "uniform") throw ConfigError(flag, name, "\"block\" or \"uniform\"", "\"" + v + "\"");
      in.recompute_method.set(v, origin(name));
    } else if (name == "--recompute-num-layers") set_i64(in.recompute_num_layers, limits::LAYERS);
    else if (name == "--use-flash-attn") in.attention.set(AttentionImpl::FLASH, origin(name));
    else if (name == "--use-distributed-optimizer") in.zero.set(1, origin(name));
    else if (name == "--untie-embeddings-and-output-weights") in.model.untied_embeddings.set(true, origin(name));
    else if (name == "--swiglu") in.model.swiglu.set(true, origin(name));
    else if (name == "--disable-bias-linear") in.model.no_biases.set(true, origin(name));
    else if (name == "--group-query-attention") in.notes.push_back(origin(name) + ": query groups from --num-query-groups");
    else if (name == "--fp32-residual-connection") in.model.fp32_residual.set(true, origin(name));
    else if (name == "--normalization") {
      const std::string v = a.value_of(name);
      if (v == "RMSNorm") in.model.rmsnorm.set(true, origin(name));
      else if (v == "LayerNorm") in.model.rmsnorm.set(false, origin(name));
      else throw ConfigError(flag, name, "\"LayerNorm\" or \"RMSNorm\"", "\"" + v + "\"");
    } else if (name == "--position-embedding-type") {
      const std::string v = a.value_of(name);
      if (v == "rope") in.model.rotary.set(true, origin(name));
      else if (v == "learned_absolute") in.model.rotary.set(false, origin(name));
      else throw ConfigError(flag, name, "\"learned_absolute\" or \"rope\"", "\"" + v + "\"");
    } else if (name == "--attention-dropout" || name == "--hidden-dropout") {
      const double p = a.number_of(name);
      if (p == 0.0) in.model.no_dropout.set(true, origin(name));
    } else if (contains(NO_EFFECT_WITH_VALUE, name)) {
      a.value_of(name);
      in.no_effect.push_back(origin(name));
    } else if (contains(NO_EFFECT_SWITCHES, name)) {
      in.no_effect.push_back(origin(name));
    } else {
      throw ConfigError(flag, name, "a Megatron-LM argument trainsim knows (see workloads/README.md: Megatron-LM arguments)",
                        "the unknown argument \"" + name + "\"");
    }
  }
  if (layers_per_virtual_stage && in.vpp) {
    // Megatron-LM itself refuses both (arguments.py asserts one of the two).
    throw ConfigError(flag, "--num-layers-per-virtual-pipeline-stage",
                      "either it or --virtual-pipeline-model-parallel-size, not both", "both");
  }
  if (layers_per_virtual_stage) {
    // Megatron: vpp = num_layers / pp / num_layers_per_virtual_pipeline_stage.
    if (!in.model.layers || !in.pp) {
      throw ConfigError(flag, "--num-layers-per-virtual-pipeline-stage",
                        "--num-layers and --pipeline-model-parallel-size alongside it", "neither");
    }
    const std::int64_t per_stage = *in.model.layers / *in.pp;
    if (per_stage % *layers_per_virtual_stage != 0) {
      throw ConfigError(flag, "--num-layers-per-virtual-pipeline-stage",
                        fmt::format("a divisor of the layers per stage ({})", per_stage),
                        std::to_string(*layers_per_virtual_stage));
    }
    in.vpp.set(static_cast<int>(per_stage / *layers_per_virtual_stage),
               origin("--num-layers-per-virtual-pipeline-stage"));
  }
  // Megatron-LM's arguments.py (core_v0.16.1, lines 430-431) sets the granularity to selective
  // whenever --recompute-activations is given, whatever --recompute-granularity says.
  if (recompute_activations) in.recompute.set(Recompute::SELECTIVE, origin("--recompute-activations"));
  check_recompute_method(in, flag, full_granularity && !recompute_activations);
  if (in.vpp && *in.vpp > 1) in.schedule.set(Schedule::INTERLEAVED, in.vpp.origin);
  return in;
}

}  // namespace trainsim::wl
