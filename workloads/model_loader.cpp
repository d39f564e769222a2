#include "model_loader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "embedded_file.hpp"
#include "enum_names.hpp"

namespace trainsim {
std::span<const EmbeddedFile> builtin_model_files();  // generated from workloads/models/*.json
}

namespace trainsim::wl {
namespace {

constexpr std::int64_t BIG = std::numeric_limits<std::int32_t>::max();

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
  m.layers = a.integer("layers", 1, BIG);
  m.hidden = a.integer("hidden", 1, BIG);
  m.heads = a.integer("heads", 1, BIG);
  m.kv_heads = a.optional_integer("kv_heads", 1, BIG).value_or(m.heads);
  m.ffn_hidden = a.optional_integer("ffn_hidden", 1, BIG).value_or(4 * m.hidden);
  m.vocab = a.integer("vocab", 1, BIG);
  m.seq_len = a.integer("seq_len", 1, BIG);
  m.type_vocab = a.optional_integer("type_vocab", 0, BIG).value_or(0);
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

}  // namespace

void validate_model(const ModelSpec& m, const std::string& source) {
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
    m.layers = c.integer("n_layer", 1, BIG);
    m.hidden = c.integer("n_embd", 1, BIG);
    m.heads = c.integer("n_head", 1, BIG);
    m.vocab = c.integer("vocab_size", 1, BIG);
    m.seq_len = c.integer("n_positions", 1, BIG);
    // n_inner: null means 4 * n_embd (transformers GPT2Config).
    m.ffn_hidden = 4 * m.hidden;
    if (c.has("n_inner") && !c.raw("n_inner").is_null()) m.ffn_hidden = c.integer("n_inner", 1, BIG);
    m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(true);
    hidden_act("activation_function", "gelu_new");
    m.position = PositionKind::LEARNED;
  } else if (type == "gpt_neox" || type == "llama" || type == "bert") {
    m.layers = c.integer("num_hidden_layers", 1, BIG);
    m.hidden = c.integer("hidden_size", 1, BIG);
    m.heads = c.integer("num_attention_heads", 1, BIG);
    m.ffn_hidden = c.integer("intermediate_size", 1, BIG);
    m.vocab = c.integer("vocab_size", 1, BIG);
    m.seq_len = c.integer("max_position_embeddings", 1, BIG);
    if (type == "gpt_neox") {
      m.position = PositionKind::ROTARY;
      m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
      hidden_act("hidden_act", "gelu");
    } else if (type == "llama") {
      m.position = PositionKind::ROTARY;
      m.norm = NormKind::RMSNORM;
      m.mlp = MlpKind::SWIGLU;
      m.dropout = false;
      m.kv_heads = c.optional_integer("num_key_value_heads", 1, BIG).value_or(m.heads);
      m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(false);
      m.biases = c.optional_boolean("attention_bias").value_or(false);
      const std::string act = hidden_act("hidden_act", "silu");
      if (act != "silu") {
        throw ConfigError(doc.source, "hidden_act", "\"silu\" (Llama's SwiGLU MLP)", "\"" + act + "\"");
      }
    } else {
      m.position = PositionKind::LEARNED;
      m.head = HeadKind::BERT_PRETRAINING;
      m.type_vocab = c.optional_integer("type_vocab_size", 0, BIG).value_or(2);
      m.tied_embeddings = c.optional_boolean("tie_word_embeddings").value_or(true);
      hidden_act("hidden_act", "gelu");
    }
  } else {
    throw ConfigError(doc.source, "model_type", "a supported Hugging Face style: \"gpt2\", \"gpt_neox\", \"llama\", \"bert\"",
                      "\"" + type + "\"");
  }
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (auto dtype = c.optional_string("torch_dtype")) {
    m.numerics = *dtype == "bfloat16" ? Numerics::BF16_MIXED : Numerics::FP16_MIXED;
  }
  m.ignored_keys = c.unread_keys();
  validate_model(m, doc.source);
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
  if (!std::isfinite(params) || params < 1) {
    throw ConfigError(flag, flag, "a parameter count >= 1 (e.g. 7.5e9)", fmt::format("{}", params));
  }
  ModelSpec m;
  m.name = fmt::format("{:g} parameters", params);
  m.description = "raw parameter count: model states only";
  m.origin = flag;
  m.raw_params = params;
  return m;
}

}  // namespace trainsim::wl
