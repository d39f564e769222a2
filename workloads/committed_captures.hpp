#pragma once
// The captures trainsim ships (workloads/captures/hf/, written by trainsim_capture.hf_zoo on a GPU
// machine's PyTorch and transformers): one small size of each Hugging Face family, in each
// precision and with and without recompute, that stand in for a user's config.json of the same
// family so that `--model config.json` needs no capture of the user's own.
//
// A committed capture stands in for a config only where nothing but sizes differs: every key of
// the user's config must equal the one in the capture's completed config
// (<name>.effective_config.json: the config as transformers completes it, every default spelled
// out), except the sizes the capture scales by (layers, widths, heads, vocabulary, positions,
// window), `layer_types` where the user's layers repeat the capture's pattern, and the keys that
// change no operation of a training step (token ids, initializer range, norm epsilons, rotary base,
// cache and output switches). A config with another structure (tied embeddings, dropout, a
// different attention) gets another capture or none.

#include <optional>
#include <string>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

// TRAINSIM_CAPTURES when set, else the source tree's workloads/captures/hf.
std::string committed_captures_dir();

// How an answer names a committed capture: its path in the source tree (workloads/captures/hf/...)
// when it lies in the built-in directory, so that answers are the same on every machine; else `path`.
std::string committed_capture_name(const std::string& path);

// Whether captures of the config's model_type are committed (whatever their structure).
bool has_committed_captures(const std::string& config_path);

// The committed capture for the Hugging Face config at `config_path` trained in `numerics`, with
// recompute or not: its path, or nullopt where the directory holds no capture of the config's
// model_type (the caller asks for a capture of the user's own). Throws ConfigError naming the
// config and the first differing key where captures of the family exist but none has the config's
// structure, or none was made in the run's numerics and recompute.
std::optional<std::string> committed_capture_for(const std::string& config_path, Numerics numerics, bool recompute);

// The layer of trainsim's own training scripts (ours/ beside committed_captures_dir(): workloads/captures/ours/, captured by
// trainsim_capture.ours on a GPU machine's PyTorch): `gpt` for a model of model.py's structure
// (LayerNorm, GELU MLP, learned positions, tied head, biases, no dropout, multi-head flash attention),
// `llama` for model_llama.py's (RMSNorm, SwiGLU, rotary, untied head, no biases, no dropout, flash), in
// the run's numerics (bf16-mixed or bf16) with recompute or not; nullopt for any other model or
// numerics, whose layer stays the PyTorch stacks' own (workloads/stacks/stack_layer.hpp).
std::optional<std::string> committed_capture_of_scripts(const ModelSpec& m, Numerics numerics, bool recompute);

// Whether a model read from a Hugging Face config trains, in `numerics`, as its family's committed
// captures were recorded (pure bf16 or autocast): what pytorch_refusals lets a capture's numerics run.
bool trains_as_committed_captures(const ModelSpec& m, Numerics numerics);

// The committed capture that costs the layer of `m` trained by `s` where the user gave none, as
// `simulate` and `plan` take it: a Hugging Face config's (committed_capture_for) or our scripts' model's
// (committed_capture_of_scripts), in the numerics the stack's layer computes in (captured_model.hpp,
// layer_numerics) and the run's recompute; nullopt where the stack runs no PyTorch layer or none is
// committed. Throws ConfigError as committed_capture_for does.
std::optional<std::string> committed_capture_for_run(const ModelSpec& m, const Strategy& s);

}  // namespace trainsim::wl
