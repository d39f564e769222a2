// A Hugging Face config.json as a model source, read as it is. GPT-2, GPT-NeoX, Llama and BERT
// styles have trainsim's hand-written layers; every other decoder-only family (mistral, qwen2,
// qwen3, gemma, phi3, olmo2, falcon, starcoder2, ...) is read for its sizes alone and takes its
// layer from a capture (workloads/capture/, captured_model.hpp), without which a run refuses it.
// Every key either changes the answer (architecture, dropout, biases, dtype), is refused with the
// reason trainsim cannot model it (mixture of experts, another head width on a hand-written layer),
// or is listed back under `ignored_hf_keys`: none is dropped silently.
#include <fmt/format.h>

#include "limits.hpp"
#include "model_loader.hpp"

namespace trainsim::wl {
namespace {


// Keys whose presence (with a value that turns the feature on) means an architecture trainsim
// does not model; answering as if they were absent would be silently wrong.
void refuse_unmodeled(StrictObject& c) {
  static constexpr std::pair<std::string_view, std::string_view> UNMODELED[] = {
      {"num_experts", "mixture-of-experts layers"},
      {"num_local_experts", "mixture-of-experts layers"},
      {"n_routed_experts", "mixture-of-experts layers"},
      {"num_experts_per_tok", "mixture-of-experts layers"},
      {"moe_intermediate_size", "mixture-of-experts layers"},
      {"q_lora_rank", "low-rank (multi-head latent) attention"},
      {"kv_lora_rank", "low-rank (multi-head latent) attention"},
      {"moe_num_experts", "mixture-of-experts layers"},
      {"n_shared_experts", "mixture-of-experts layers"},
      // An encoder-decoder's cross-attention adds a third block to every layer (transformers
      // builds crossattention when add_cross_attention is true).
      {"add_cross_attention", "cross-attention layers"},
      // Weights stored in int8/int4/fp8 (bitsandbytes, GPTQ, AWQ, ...) change every memory figure.
      {"quantization_config", "quantized weights"},
  };
  auto is_off = [](const nlohmann::json& v) {
    return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0);
  };
  auto refuse = [&](const std::string& key, std::string_view what, const nlohmann::json& v) {
    throw ConfigError(c.source(), key, fmt::format("no {} (not modeled by trainsim: the answer would be wrong)", what),
                      describe_json(v));
  };
  for (const auto& [key, what] : UNMODELED) {
    if (!c.has(key)) continue;
    const nlohmann::json& v = c.raw(key);
    if (!is_off(v)) refuse(std::string(key), what, v);
  }
  // Experts go by many names ("num_local_experts", "moe_num_experts", "n_shared_experts", DBRX's
  // "ffn_config": {"moe_num_experts": 16}); any key naming experts that is turned on, at the top
  // level or one object down, is refused rather than answered as a dense model.
  for (const auto& [key, v] : c.json().items()) {
    if (key.find("expert") != std::string::npos && !is_off(v)) refuse(key, "mixture-of-experts layers", v);
    if (!v.is_object()) continue;
    for (const auto& [inner, w] : v.items()) {
      if (inner.find("expert") != std::string::npos && !is_off(w)) refuse(key + "." + inner, "mixture-of-experts layers", w);
    }
  }
}

// Dropout masks are stored activations (Korthikanti et al. 2022, Sec. 4.1): a model trained with
// every dropout probability at 0 stores none. `defaults` are transformers' defaults for the keys.
void read_dropout(StrictObject& c, ModelSpec& m, std::initializer_list<std::pair<std::string_view, double>> keys) {
  int on = 0, off = 0;
  for (const auto& [key, fallback] : keys) {
    const double p = c.optional_number(key, NumberRange{0.0, 1.0, true, "a probability in [0, 1]"}).value_or(fallback);
    (p > 0 ? on : off) += 1;
  }
  m.dropout = on > 0;
  if (on > 0 && off > 0) {
    m.notes.push_back(c.source() + ": some dropout probabilities are 0 and others not; dropout masks are counted at "
                                   "every dropout site");
  }
}

// torch_dtype is the dtype the checkpoint is stored in. A half-precision checkpoint is trained in
// mixed precision of that type; a float32 one says nothing about training numerics (the default,
// fp16-mixed, stays, and a note says so); anything else (int8, float8, ...) is a quantized
// checkpoint that is not trained as such, and an error.
void read_torch_dtype(StrictObject& c, ModelSpec& m) {
  const auto dtype = c.optional_string("torch_dtype");
  if (!dtype) return;
  if (*dtype == "bfloat16") {
    m.numerics = Numerics::BF16_MIXED;
  } else if (*dtype == "float16") {
    m.numerics = Numerics::FP16_MIXED;
  } else if (*dtype == "float32") {
    m.notes.push_back(c.source() + ": torch_dtype float32 is the checkpoint's storage type; training numerics stay " +
                      std::string(to_string(m.numerics)) + " (set --precision to change them)");
  } else {
    throw ConfigError(c.source(), "torch_dtype",
                      "\"bfloat16\", \"float16\" or \"float32\" (a quantized checkpoint is not trained as such; set "
                      "--precision for the training numerics)",
                      "\"" + *dtype + "\"");
  }
}

// head_dim: the width of one attention head. trainsim models heads of hidden / heads (as GPT,
// Llama 1-3 and GPT-NeoX have); a config that says the same is honoured, another width is
// refused rather than silently computed with the wrong attention shapes.
void check_head_dim(StrictObject& c, const ModelSpec& m) {
  if (!c.has("head_dim") || c.raw("head_dim").is_null()) return;
  const std::int64_t head_dim = c.integer("head_dim", 1, limits::HIDDEN.max);
  if (head_dim != m.head_dim()) {
    throw ConfigError(c.source(), "head_dim",
                      fmt::format("hidden_size / num_attention_heads = {} (attention heads of another width than "
                                  "hidden / heads are not modeled)",
                                  m.head_dim()),
                      std::to_string(head_dim));
  }
}

void read_gpt2(StrictObject& c, ModelSpec& m) {
  m.layers = read_limited(c, "n_layer", limits::LAYERS);
  m.hidden = read_limited(c, "n_embd", limits::HIDDEN);
  m.heads = read_limited(c, "n_head", limits::HEADS);
  m.vocab = read_limited(c, "vocab_size", limits::VOCAB);
  m.seq_len = read_limited(c, "n_positions", limits::SEQ);
  // n_inner: null means 4 * n_embd (transformers GPT2Config).
  m.ffn_hidden = 4 * m.hidden;
  if (c.has("n_inner") && !c.raw("n_inner").is_null()) m.ffn_hidden = read_limited(c, "n_inner", limits::FFN_HIDDEN);
  m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(true);
  c.optional_string("activation_function");
  m.position = PositionKind::LEARNED;
  read_dropout(c, m, {{"resid_pdrop", 0.1}, {"embd_pdrop", 0.1}, {"attn_pdrop", 0.1}});
}

void read_common(StrictObject& c, ModelSpec& m) {
  m.layers = read_limited(c, "num_hidden_layers", limits::LAYERS);
  m.hidden = read_limited(c, "hidden_size", limits::HIDDEN);
  m.heads = read_limited(c, "num_attention_heads", limits::HEADS);
  m.ffn_hidden = read_limited(c, "intermediate_size", limits::FFN_HIDDEN);
  m.vocab = read_limited(c, "vocab_size", limits::VOCAB);
  m.seq_len = read_limited(c, "max_position_embeddings", limits::SEQ);
}

void read_neox(StrictObject& c, ModelSpec& m) {
  read_common(c, m);
  m.position = PositionKind::ROTARY;
  m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
  c.optional_string("hidden_act");
  read_dropout(c, m, {{"hidden_dropout", 0.0}, {"attention_dropout", 0.0}});
}

void read_llama(StrictObject& c, ModelSpec& m) {
  read_common(c, m);
  m.position = PositionKind::ROTARY;
  m.norm = NormKind::RMSNORM;
  m.mlp = MlpKind::SWIGLU;
  m.kv_heads = read_optional_limited(c, "num_key_value_heads", limits::HEADS).value_or(m.heads);
  m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
  // One switch covers every linear layer's bias here; configs that split them are refused.
  const bool attention_bias = c.optional_boolean("attention_bias").value_or(false);
  const bool mlp_bias = c.optional_boolean("mlp_bias").value_or(false);
  if (attention_bias != mlp_bias) {
    throw ConfigError(c.source(), "mlp_bias",
                      fmt::format("the same as attention_bias ({}): biases on some linear layers only are not modeled",
                                  attention_bias),
                      mlp_bias ? "true" : "false");
  }
  m.biases = attention_bias;
  const std::string act = c.optional_string("hidden_act").value_or("silu");
  if (act != "silu") throw ConfigError(c.source(), "hidden_act", "\"silu\" (Llama's SwiGLU MLP)", "\"" + act + "\"");
  // Llama has no hidden dropout; only attention dropout, 0 in every released model.
  read_dropout(c, m, {{"attention_dropout", 0.0}});
}

// The first of `keys` the config has (transformers' spellings differ by family, as
// trainsim_capture.scale.HF_KEYS lists them), within `limit`.
std::optional<std::int64_t> first_of(StrictObject& c, std::initializer_list<std::string_view> keys, const IntLimit& limit) {
  for (const std::string_view key : keys) {
    if (c.has(key) && !c.raw(key).is_null()) return read_limited(c, key, limit);
  }
  return std::nullopt;
}

std::int64_t required_of(StrictObject& c, std::initializer_list<std::string_view> keys, const IntLimit& limit) {
  if (auto v = first_of(c, keys, limit)) return *v;
  std::string names;
  for (const std::string_view key : keys) names += (names.empty() ? "\"" : " or \"") + std::string(key) + "\"";
  throw ConfigError(c.source(), std::string(*keys.begin()), "a size under one of the keys " + names, "none");
}

// A decoder-only family without a hand-written layer: its sizes as trainsim_capture.scale's
// symbols_from_hf_config reads them (kv = heads unless given, falcon's multi_query = one KV head;
// head_dim = hidden / heads unless given; the MLP width 4 hidden unless given). What the layer
// computes, holds and saves comes from its capture; the norm, MLP and position kinds below only
// name it in answers.
void read_captured_family(StrictObject& c, ModelSpec& m) {
  if (c.optional_boolean("is_encoder_decoder").value_or(false)) {
    throw ConfigError(c.source(), "is_encoder_decoder", "false (a decoder-only causal language model)", "true");
  }
  m.layer_from_capture = true;
  m.layers = required_of(c, {"num_hidden_layers", "n_layer", "n_layers"}, limits::LAYERS);
  m.hidden = required_of(c, {"hidden_size", "n_embd", "d_model"}, limits::HIDDEN);
  m.heads = required_of(c, {"num_attention_heads", "n_head", "n_heads"}, limits::HEADS);
  m.vocab = required_of(c, {"vocab_size"}, limits::VOCAB);
  m.seq_len = first_of(c, {"max_position_embeddings", "n_positions"}, limits::SEQ).value_or(0);
  const bool multi_query = c.optional_boolean("multi_query").value_or(false);
  const bool new_arch = c.optional_boolean("new_decoder_architecture").value_or(false);
  // Falcon's multi-query attention has one key/value head whatever num_kv_heads says (transformers
  // models/falcon/modeling_falcon.py, FalconAttention: num_kv_heads if new_decoder_architecture or
  // not multi_query, else 1).
  m.kv_heads = multi_query && !new_arch ? 1
                                        : first_of(c, {"num_key_value_heads", "num_kv_heads", "n_head_kv"}, limits::HEADS).value_or(m.heads);
  m.ffn_hidden = first_of(c, {"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"}, limits::FFN_HIDDEN).value_or(4 * m.hidden);
  if (auto d = first_of(c, {"head_dim"}, limits::HIDDEN); d && *d * m.heads != m.hidden) m.head_dim_override = *d;
  m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
  m.position = PositionKind::ROTARY;
  m.norm = NormKind::RMSNORM;
  m.mlp = MlpKind::SWIGLU;
  m.biases = false;
  // Windowed attention changes the attention's cost only where the window is shorter than the
  // sequence (checked per run, captured_model.cpp); qwen2's use_sliding_window false turns it off.
  if (c.optional_boolean("use_sliding_window").value_or(true) && c.has("sliding_window") && !c.raw("sliding_window").is_null()) {
    m.sliding_window = c.integer("sliding_window", 1, std::int64_t{1} << 40);
  }
  // Every dropout probability the family names (attention_dropout, hidden_dropout, resid_pdrop, ...):
  // a nonzero one stores masks the capture records.
  std::vector<std::string> keys;
  for (const auto& [key, v] : c.json().items()) {
    const bool dropout = key.find("dropout") != std::string::npos || key.find("pdrop") != std::string::npos;
    if (dropout && !v.is_null()) keys.push_back(key);
  }
  m.dropout = false;
  for (const auto& key : keys) {
    m.dropout = c.number(key, NumberRange{0.0, 1.0, true, "a probability in [0, 1]"}) > 0 || m.dropout;
  }
}

void read_bert(StrictObject& c, ModelSpec& m) {
  read_common(c, m);
  m.position = PositionKind::LEARNED;
  m.head = HeadKind::BERT_PRETRAINING;
  m.type_vocab = read_optional_limited(c, "type_vocab_size", limits::TYPE_VOCAB).value_or(2);
  m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(true);
  c.optional_string("hidden_act");
  if (const auto pos = c.optional_string("position_embedding_type"); pos && *pos != "absolute") {
    throw ConfigError(c.source(), "position_embedding_type", "\"absolute\" (relative position biases are not modeled)",
                      "\"" + *pos + "\"");
  }
  read_dropout(c, m, {{"hidden_dropout_prob", 0.1}, {"attention_probs_dropout_prob", 0.1}});
}

}  // namespace

ModelSpec load_huggingface_config(const JsonDocument& doc) {
  StrictObject c(doc.json, doc.source, "");
  const std::string type = c.string("model_type");
  ModelSpec m;
  m.origin = doc.source;
  m.huggingface_config = doc.source;
  m.name = type;
  m.description = "Hugging Face config.json (" + type + ")";
  if (type == "gpt2") read_gpt2(c, m);
  else if (type == "gpt_neox") read_neox(c, m);
  else if (type == "llama") read_llama(c, m);
  else if (type == "bert") read_bert(c, m);
  else read_captured_family(c, m);
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  refuse_unmodeled(c);
  read_torch_dtype(c, m);
  validate_model(m, doc.source);
  if (!m.layer_from_capture) check_head_dim(c, m);
  if (!m.layer_from_capture && c.has("sliding_window") && !c.raw("sliding_window").is_null()) {
    throw ConfigError(doc.source, "sliding_window", "no sliding-window attention for a " + type + " layer (not modeled)",
                      describe_json(c.raw("sliding_window")));
  }
  m.ignored_keys = c.unread_keys();
  return m;
}

}  // namespace trainsim::wl
