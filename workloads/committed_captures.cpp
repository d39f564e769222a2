#include "committed_captures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "capture_scale.hpp"
#include "captured_model.hpp"
#include "config_error.hpp"
#include "stack_model.hpp"
#include "strict_json.hpp"

#ifndef TRAINSIM_COMMITTED_CAPTURES_DIR
#error "TRAINSIM_COMMITTED_CAPTURES_DIR: the folder of the committed captures (set by workloads/CMakeLists.txt)"
#endif

namespace trainsim::wl {
namespace {

// The sizes a capture scales by, under every family's spelling (huggingface_config.cpp,
// read_captured_family; trainsim_capture.scale.HF_KEYS).
constexpr std::array<std::string_view, 24> SIZE_KEYS = {
    "num_hidden_layers", "n_layer",          "n_layers",          "hidden_size",    "n_embd",       "d_model",
    "num_attention_heads", "n_head",         "n_heads",           "num_key_value_heads", "num_kv_heads", "n_head_kv",
    "intermediate_size", "n_inner",          "ffn_hidden_size",   "ffn_dim",        "head_dim",     "vocab_size",
    "max_position_embeddings", "n_positions", "n_ctx",            "sliding_window", "original_max_position_embeddings",
    "max_window_layers"};

// Keys that change no operation of a training step: token ids, the initialization, norm epsilons
// (a scalar argument), the rotary base (it sets the inverse frequencies' values, not their shape),
// the cache and output switches (training runs with use_cache off), labels and bookkeeping.
constexpr std::array<std::string_view, 25> NEUTRAL_KEYS = {
    "_name_or_path",     "architectures",   "transformers_version", "dtype",          "torch_dtype",
    "bos_token_id",      "eos_token_id",    "pad_token_id",         "sep_token_id",   "decoder_start_token_id",
    "initializer_range", "rms_norm_eps",    "layer_norm_eps",       "layer_norm_epsilon", "rope_theta",
    "use_cache",         "output_attentions", "output_hidden_states", "return_dict",   "id2label",
    "label2id",          "problem_type",    "tokenizer_class",      "task_specific_params", "model_type"};

bool listed(std::string_view key, auto const& keys) { return std::find(keys.begin(), keys.end(), key) != keys.end(); }

// A layer_types list (gemma2/3, qwen2/3, mistral): the user's layers must repeat the capture's
// pattern, its shortest period.
bool same_layer_pattern(const nlohmann::json& user, const nlohmann::json& ours) {
  if (!user.is_array() || !ours.is_array() || ours.empty()) return user == ours;
  const std::size_t period = shortest_period(ours);
  for (std::size_t i = 0; i < user.size(); ++i) {
    if (user[i] != ours[i % period]) return false;
  }
  return true;
}

// rope_parameters (transformers 5) holds the rotary base beside the rotary type: the base is neutral.
nlohmann::json without_rope_theta(nlohmann::json v) {
  if (v.is_object()) v.erase("rope_theta");
  return v;
}

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

struct Difference {
  std::string key, user, ours;
};

std::vector<Difference> differences(const nlohmann::json& user, const nlohmann::json& ours) {
  std::vector<Difference> out;
  for (const auto& [key, value] : user.items()) {
    if (listed(key, SIZE_KEYS) || listed(key, NEUTRAL_KEYS) || !ours.contains(key)) continue;
    const nlohmann::json& theirs = ours.at(key);
    const bool same = key == "layer_types"       ? same_layer_pattern(value, theirs)
                      : key == "rope_parameters" ? without_rope_theta(value) == without_rope_theta(theirs)
                                                 : value == theirs;
    if (!same) out.push_back({key, shown(value), shown(theirs)});
  }
  return out;
}

std::string variant_of(Numerics n, bool recompute) {
  const std::string base = n == Numerics::BF16_MIXED ? "autocast-bf16" : n == Numerics::BF16 ? "bf16" : "";
  return base.empty() ? base : base + (recompute ? ".recompute" : "");
}

std::string capture_command(const std::string& config_path, Numerics n, bool recompute) {
  const std::string precision = n == Numerics::BF16_MIXED ? "autocast-bf16"
                                : n == Numerics::BF16     ? "bf16"
                                : n == Numerics::FP32     ? "fp32"
                                                          : "fp16-scaler";
  return fmt::format("`trainsim capture --hf-config {} --micro-batch B --seq S --precision {}{}` (workloads/capture/README.md) "
                     "and pass --capture FILE",
                     config_path, precision, recompute ? " --recompute" : "");
}

constexpr std::string_view COMPLETED_CONFIG = ".effective_config.json";

// The committed families' names, sorted: the same answer on every machine.
std::vector<std::string> committed_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() > COMPLETED_CONFIG.size() && file.ends_with(COMPLETED_CONFIG) && names.size() < 4096) {
      names.push_back(file.substr(0, file.size() - COMPLETED_CONFIG.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> model_type_of(const JsonDocument& config) {
  if (!config.json.is_object() || !config.json.contains("model_type") || !config.json.at("model_type").is_string()) {
    return std::nullopt;
  }
  return config.json.at("model_type").get<std::string>();
}

// The completed configs of `model_type`'s committed captures, by name.
std::vector<std::pair<std::string, JsonDocument>> family(const std::filesystem::path& dir, const std::string& model_type) {
  std::vector<std::pair<std::string, JsonDocument>> out;
  for (const std::string& name : committed_names(dir)) {
    JsonDocument ours = parse_json_file((dir / (name + std::string(COMPLETED_CONFIG))).string());
    if (ours.json.is_object() && ours.json.value("model_type", "") == model_type) out.emplace_back(name, std::move(ours));
  }
  return out;
}

}  // namespace

std::string committed_captures_dir() {
  const char* dir = std::getenv("TRAINSIM_CAPTURES");
  return dir != nullptr && *dir != '\0' ? dir : TRAINSIM_COMMITTED_CAPTURES_DIR;
}

std::string committed_capture_name(const std::string& path) {
  const std::string builtin = std::string(TRAINSIM_COMMITTED_CAPTURES_DIR) + "/";
  const std::string ours = std::filesystem::path(TRAINSIM_COMMITTED_CAPTURES_DIR).parent_path().string() + "/ours/";
  if (path.starts_with(ours)) return "workloads/captures/ours/" + path.substr(ours.size());
  return path.starts_with(builtin) ? "workloads/captures/hf/" + path.substr(builtin.size()) : path;
}

bool has_committed_captures(const std::string& config_path) {
  const std::optional<std::string> model_type = model_type_of(parse_json_file(config_path));
  return model_type && !family(committed_captures_dir(), *model_type).empty();
}

std::optional<std::string> committed_capture_for(const std::string& config_path, Numerics numerics, bool recompute) {
  const JsonDocument config = parse_json_file(config_path);
  const std::optional<std::string> type = model_type_of(config);
  if (!type) return std::nullopt;
  const std::string& model_type = *type;
  const std::filesystem::path dir = committed_captures_dir();

  std::optional<std::pair<std::string, std::vector<Difference>>> closest;
  for (const auto& [name, ours] : family(dir, model_type)) {
    std::vector<Difference> diff = differences(config.json, ours.json);
    if (diff.empty()) {
      const std::string variant = variant_of(numerics, recompute);
      const std::filesystem::path capture = dir / (name + "." + variant + ".json.gz");
      if (variant.empty() || !std::filesystem::exists(std::filesystem::symlink_status(capture))) {
        throw ConfigError(config_path, "--precision",
                          fmt::format("numerics with a committed capture of {} (bf16-mixed or bf16, with or without recompute), or "
                                      "a capture of your own: {}",
                                      name, capture_command(config_path, numerics, recompute)),
                          fmt::format("{}{}", to_string(numerics), recompute ? " with recompute" : ""));
      }
      return capture.string();
    }
    if (!closest || diff.size() < closest->second.size()) closest.emplace(name, std::move(diff));
  }
  if (!closest) return std::nullopt;
  const Difference& d = closest->second.front();
  throw ConfigError(config_path, d.key,
                    fmt::format("{} as in the committed capture {} of {} (its structure differs in {} key{}: a capture "
                                "stands in only for the same structure), or a capture of your own: {}",
                                d.ours, closest->first, model_type, closest->second.size(),
                                closest->second.size() == 1 ? "" : "s", capture_command(config_path, numerics, recompute)),
                    d.user);
}

std::optional<std::string> committed_capture_of_scripts(const ModelSpec& m, Numerics numerics, bool recompute) {
  if (!m.has_architecture() || !m.huggingface_config.empty() || m.layer_from_capture || m.dropout ||
      m.head != HeadKind::LM || m.type_vocab != 0 || m.sliding_window || m.head_dim_override != 0 ||
      m.attention != AttentionImpl::FLASH) {
    return std::nullopt;
  }
  const bool gpt = m.norm == NormKind::LAYERNORM && m.mlp == MlpKind::GELU && m.position == PositionKind::LEARNED &&
                   m.tied_embeddings && m.biases && m.kv_heads == m.heads;
  const bool llama = m.norm == NormKind::RMSNORM && m.mlp == MlpKind::SWIGLU && m.position == PositionKind::ROTARY &&
                     !m.tied_embeddings && !m.biases;
  const std::string variant = variant_of(numerics, recompute);
  if ((!gpt && !llama) || variant.empty()) return std::nullopt;
  const std::filesystem::path capture =
      std::filesystem::path(committed_captures_dir()).parent_path() / "ours" / ((gpt ? "gpt." : "llama.") + variant + ".json.gz");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(capture, ec)) return std::nullopt;
  return capture.string();
}

bool trains_as_committed_captures(const ModelSpec& m, Numerics numerics) {
  return !m.huggingface_config.empty() && (numerics == Numerics::BF16 || numerics == Numerics::BF16_MIXED) &&
         has_committed_captures(m.huggingface_config);
}

std::optional<std::string> committed_capture_for_run(const ModelSpec& m, const Strategy& s) {
  const StackModel& stack = stack_model(s);
  const std::optional<Numerics> numerics = layer_numerics(m, s);
  if (!stack.pytorch_eager || !numerics) return std::nullopt;
  const bool recompute = s.recompute == Recompute::FULL;
  if (!m.huggingface_config.empty()) return committed_capture_for(m.huggingface_config, *numerics, recompute);
  if (s.tp != 1 || s.recompute == Recompute::SELECTIVE) return std::nullopt;
  return committed_capture_of_scripts(m, *numerics, recompute);
}

}  // namespace trainsim::wl
