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
  m.layers = read_limited(a, "layers", limits::LAYERS);
  m.hidden = read_limited(a, "hidden", limits::HIDDEN);
  m.heads = read_limited(a, "heads", limits::HEADS);
  m.kv_heads = read_optional_limited(a, "kv_heads", limits::HEADS).value_or(m.heads);
  m.ffn_hidden = read_optional_limited(a, "ffn_hidden", limits::FFN_HIDDEN).value_or(4 * m.hidden);
  m.vocab = read_limited(a, "vocab", limits::VOCAB);
  m.seq_len = read_limited(a, "seq_len", limits::SEQ);
  m.type_vocab = read_optional_limited(a, "type_vocab", limits::TYPE_VOCAB).value_or(0);
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
  throw ConfigError("built-in models", name, "one of " + join_names(all), "\"" + name + "\"" + did_you_mean(name, all));
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
                    "\"" + name_or_path + "\"" + did_you_mean(name_or_path, all));
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
