#pragma once
// Model inputs: our own JSON (workloads/models/*.json, built in by name), a Hugging Face
// config.json (GPT-2, GPT-NeoX, Llama and BERT styles) or a raw parameter count.

#include <string>
#include <vector>

#include "model.hpp"
#include "strict_json.hpp"

namespace trainsim::wl {

ModelSpec load_model(const JsonDocument& doc);  // detects our schema vs a Hugging Face config
ModelSpec load_model_file(const std::string& path);
ModelSpec builtin_model(const std::string& name);
std::vector<std::string> builtin_model_names();
// `--model gpt3-175b` (built in) or `--model path/config.json`.
ModelSpec resolve_model(const std::string& name_or_path, const std::string& flag = "--model");
// `--params 7.5e9`: model states only.
ModelSpec model_from_param_count(double params, const std::string& flag = "--params");

ModelSpec load_huggingface_config(const JsonDocument& doc);
// Cross-field checks shared by every source (heads divide hidden, kv_heads divide heads, ...).
void validate_model(const ModelSpec& m, const std::string& source);

}  // namespace trainsim::wl
