#include "model_loader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "embedded_file.hpp"
#include "enum_names.hpp"
#include "limits.hpp"

namespace trainsim {
std::span<const EmbeddedFile> builtin_model_files();  // generated from workloads/models/*.json
}

namespace trainsim::wl {
namespace {

std::int64_t read_int(StrictObject& o, std::string_view key, const IntLimit& limit) {
  return o.integer(key, limit.min, limit.max);
}
std::optional<std::int64_t> read_optional_int(StrictObject& o, std::string_view key, const IntLimit& limit) {
  return o.optional_integer(key, limit.min, limit.max);
}

PublishedCount read_published(StrictObject o) {
  PublishedCount p;
  p.params = o.number("params", positive("parameters"));
  p.significant_digits = static_cast<int>(o.integer("significant_digits", 1, 6));
  p.source = o.string("source");
  o.finish();
  return p;
}

ModelSpec load_own_model(const JsonDocument& doc) {
  StrictObject root(doc.json, doc.source, "");
  const auto version = root.integer("schema_version", 1, 1000);
  if (version != MODEL_SCHEMA_VERSION) {
    throw ConfigError(doc.source, "schema_version", fmt::format("schema version {}", MODEL_SCHEMA_VERSION),
                      std::to_string(version));
  }
  ModelSpec m;
  m.origin = doc.source;
  m.name = root.string("name");
  m.description = root.string("description");
  StrictObject a = root.object("architecture");
  m.layers = read_int(a, "layers", limits::LAYERS);
  m.hidden = read_int(a, "hidden", limits::HIDDEN);
  m.heads = read_int(a, "heads", limits::HEADS);
  m.kv_heads = read_optional_int(a, "kv_heads", limits::HEADS).value_or(m.heads);
  m.ffn_hidden = read_optional_int(a, "ffn_hidden", limits::FFN_HIDDEN).value_or(4 * m.hidden);
  m.vocab = read_int(a, "vocab", limits::VOCAB);
  m.seq_len = read_int(a, "seq_len", limits::SEQ);
  m.type_vocab = read_optional_int(a, "type_vocab", limits::TYPE_VOCAB).value_or(0);
  m.tied_embeddings = a.boolean("tied_embeddings");
  m.biases = a.boolean("biases");
  m.dropout = a.boolean("dropout");
  m.norm = a.choice<NormKind>("norm", names::NORM);
  m.mlp = a.choice<MlpKind>("mlp", names::MLP);
  m.position = a.choice<PositionKind>("position", names::POSITION);
  m.head = a.optional_choice<HeadKind>("head", names::HEAD).value_or(HeadKind::LM);
  a.finish();
  StrictObject n = root.object("numerics");
  m.numerics = n.choice<Numerics>("precision", names::NUMERICS);
  m.attention = n.choice<AttentionImpl>("attention", names::ATTENTION);
  m.fp32_residual = n.optional_boolean("fp32_residual").value_or(false);
  n.finish();
  if (auto pub = root.optional_object("published")) m.published = read_published(*pub);
  root.finish();
  validate_model(m, doc.source);
  return m;
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
  if (!c.has("head_dim") || c.raw("head_dim").is_null()) {
    c.has("head_dim");
    return;
  }
  const std::int64_t head_dim = c.integer("head_dim", 1, limits::HIDDEN.max);
  if (head_dim != m.head_dim()) {
    throw ConfigError(c.source(), "head_dim",
                      fmt::format("hidden_size / num_attention_heads = {} (attention heads of another width than "
                                  "hidden / heads are not modeled)",
                                  m.head_dim()),
                      std::to_string(head_dim));
  }
}

}  // namespace

void validate_model(const ModelSpec& m, const std::string& source) {
  // Each source checks its own keys against these limits; this is the net under all of them
  // (a model assembled from Megatron-LM arguments over a built-in one).
  const struct {
    const char* key;
    std::int64_t value;
    IntLimit limit;
  } bounded[] = {{"architecture.layers", m.layers, limits::LAYERS},
                 {"architecture.hidden", m.hidden, limits::HIDDEN},
                 {"architecture.heads", m.heads, limits::HEADS},
                 {"architecture.kv_heads", m.kv_heads, limits::HEADS},
                 {"architecture.ffn_hidden", m.ffn_hidden, limits::FFN_HIDDEN},
                 {"architecture.vocab", m.vocab, limits::VOCAB},
                 // 0: a model from Megatron-LM arguments without --max-position-embeddings.
                 {"architecture.seq_len", m.seq_len, IntLimit{0, limits::SEQ.max}},
                 {"architecture.type_vocab", m.type_vocab, limits::TYPE_VOCAB}};
  for (const auto& b : bounded) {
    if (!b.limit.contains(b.value)) throw ConfigError(source, b.key, b.limit.text(), std::to_string(b.value));
  }
  if (m.hidden % m.heads != 0) {
    throw ConfigError(source, "architecture.heads", fmt::format("a divisor of hidden ({})", m.hidden),
                      std::to_string(m.heads));
  }
  if (m.heads % m.kv_heads != 0) {
    throw ConfigError(source, "architecture.kv_heads", fmt::format("a divisor of heads ({})", m.heads),
                      std::to_string(m.kv_heads));
  }
}

ModelSpec load_huggingface_config(const JsonDocument& doc) {
  StrictObject c(doc.json, doc.source, "");
  const std::string type = c.string("model_type");
  ModelSpec m;
  m.origin = doc.source;
  m.name = type;
  m.description = "Hugging Face config.json (" + type + ")";
  auto hidden_act = [&](std::string_view key, std::string_view fallback) {
    return c.optional_string(key).value_or(std::string(fallback));
  };
  if (type == "gpt2") {
    m.layers = read_int(c, "n_layer", limits::LAYERS);
    m.hidden = read_int(c, "n_embd", limits::HIDDEN);
    m.heads = read_int(c, "n_head", limits::HEADS);
    m.vocab = read_int(c, "vocab_size", limits::VOCAB);
    m.seq_len = read_int(c, "n_positions", limits::SEQ);
    // n_inner: null means 4 * n_embd (transformers GPT2Config).
    m.ffn_hidden = 4 * m.hidden;
    if (c.has("n_inner") && !c.raw("n_inner").is_null()) m.ffn_hidden = read_int(c, "n_inner", limits::FFN_HIDDEN);
    m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(true);
    hidden_act("activation_function", "gelu_new");
    m.position = PositionKind::LEARNED;
  } else if (type == "gpt_neox" || type == "llama" || type == "bert") {
    m.layers = read_int(c, "num_hidden_layers", limits::LAYERS);
    m.hidden = read_int(c, "hidden_size", limits::HIDDEN);
    m.heads = read_int(c, "num_attention_heads", limits::HEADS);
    m.ffn_hidden = read_int(c, "intermediate_size", limits::FFN_HIDDEN);
    m.vocab = read_int(c, "vocab_size", limits::VOCAB);
    m.seq_len = read_int(c, "max_position_embeddings", limits::SEQ);
    if (type == "gpt_neox") {
      m.position = PositionKind::ROTARY;
      m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
      hidden_act("hidden_act", "gelu");
    } else if (type == "llama") {
      m.position = PositionKind::ROTARY;
      m.norm = NormKind::RMSNORM;
      m.mlp = MlpKind::SWIGLU;
      m.dropout = false;
      m.kv_heads = read_optional_int(c, "num_key_value_heads", limits::HEADS).value_or(m.heads);
      m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
      m.biases = c.optional_boolean("attention_bias").value_or(false);
      const std::string act = hidden_act("hidden_act", "silu");
      if (act != "silu") {
        throw ConfigError(doc.source, "hidden_act", "\"silu\" (Llama's SwiGLU MLP)", "\"" + act + "\"");
      }
    } else {
      m.position = PositionKind::LEARNED;
      m.head = HeadKind::BERT_PRETRAINING;
      m.type_vocab = read_optional_int(c, "type_vocab_size", limits::TYPE_VOCAB).value_or(2);
      m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(true);
      hidden_act("hidden_act", "gelu");
    }
  } else {
    throw ConfigError(doc.source, "model_type", "a supported Hugging Face style: \"gpt2\", \"gpt_neox\", \"llama\", \"bert\"",
                      "\"" + type + "\"");
  }
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  read_torch_dtype(c, m);
  validate_model(m, doc.source);
  check_head_dim(c, m);
  m.ignored_keys = c.unread_keys();
  return m;
}

ModelSpec load_model(const JsonDocument& doc) {
  if (doc.json.is_object() && doc.json.contains("schema_version")) return load_own_model(doc);
  if (doc.json.is_object() && doc.json.contains("model_type")) return load_huggingface_config(doc);
  throw ConfigError(doc.source, "(document)",
                    "a trainsim model (with \"schema_version\") or a Hugging Face config.json (with \"model_type\")",
                    doc.json.is_object() ? "an object with neither key" : describe_json(doc.json));
}

ModelSpec load_model_file(const std::string& path) { return load_model(parse_json_file(path)); }

ModelSpec builtin_model(const std::string& name) {
  for (const auto& file : builtin_model_files()) {
    if (file.name == name) {
      ModelSpec m = load_model(parse_json_text(file.text, "workloads/models/" + name + ".json"));
      m.origin = "built-in";
      return m;
    }
  }
  std::vector<std::string_view> all;
  for (const auto& file : builtin_model_files()) all.push_back(file.name);
  throw ConfigError("built-in models", name, "one of " + join_names(all));
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> out;
  for (const auto& file : builtin_model_files()) out.emplace_back(file.name);
  return out;
}

ModelSpec resolve_model(const std::string& name_or_path, const std::string& flag) {
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (is_path) return load_model_file(name_or_path);
  for (const auto& file : builtin_model_files()) {
    if (file.name == name_or_path) return builtin_model(name_or_path);
  }
  std::vector<std::string_view> all;
  for (const auto& file : builtin_model_files()) all.push_back(file.name);
  throw ConfigError(flag, flag, "a built-in model (" + join_names(all) + ") or a path to a model or config.json",
                    "\"" + name_or_path + "\"");
}

ModelSpec model_from_param_count(double params, const std::string& flag) {
  if (!std::isfinite(params) || params < 1 || params > limits::MAX_RAW_PARAMS) {
    throw ConfigError(flag, flag, fmt::format("a parameter count in [1, {:g}] (e.g. 7.5e9)", limits::MAX_RAW_PARAMS),
                      fmt::format("{}", params));
  }
  ModelSpec m;
  m.name = fmt::format("{:g} parameters", params);
  m.description = "raw parameter count: model states only";
  m.origin = flag;
  m.raw_params = params;
  return m;
}

}  // namespace trainsim::wl
