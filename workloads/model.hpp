#pragma once
// What is trained: transformer dimensions and training numerics. Loaded strictly from
// workloads/models/*.json, from a Hugging Face config.json, or made from a raw parameter count
// (`--params 7.5e9`, model states only, as in ZeRO's Table 1).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::wl {

inline constexpr int MODEL_SCHEMA_VERSION = 1;

enum class NormKind { LAYERNORM, RMSNORM };
enum class MlpKind { GELU, SWIGLU };
enum class PositionKind { LEARNED, ROTARY };
enum class HeadKind { LM, BERT_PRETRAINING };
// Training numerics. Mixed precision keeps fp32 master weights and Adam moments (ZeRO's K = 12).
enum class Numerics { FP16_MIXED, BF16_MIXED, BF16, FP32 };
enum class AttentionImpl { MATERIALIZED, FLASH };

std::string_view to_string(NormKind v);
std::string_view to_string(MlpKind v);
std::string_view to_string(PositionKind v);
std::string_view to_string(HeadKind v);
std::string_view to_string(Numerics v);
std::string_view to_string(AttentionImpl v);

struct PublishedCount {
  double params = 0;       // as printed, in parameters
  int significant_digits = 0;  // digits printed ("1008B" -> 4, "1.5B" -> 2)
  std::string source;
};

struct ModelCapture;  // captured_model.hpp

// Parameters as a capture counted them (captured_model.cpp), for a family whose layer trainsim knows
// only from a capture: they replace model_params.hpp's closed forms. Elements per tensor, by group.
struct CapturedParamCounts {
  std::vector<double> embedding, layer, head;  // the tensors of the embedding, of one layer, of the head
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string origin;  // a path, "built-in", "Hugging Face config.json", "--params"
  std::string huggingface_config;  // the config.json a Hugging Face model was read from (committed_captures.hpp)
  // Architecture (absent when only a raw parameter count is known).
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;    // grouped-query attention; == heads for multi-head attention
  std::int64_t ffn_hidden = 0;  // 4 * hidden for GPT-style MLPs
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;     // training sequence length and learned position table size
  std::int64_t type_vocab = 0;  // BERT token-type embeddings
  bool tied_embeddings = true;
  bool biases = true;
  bool dropout = true;  // dropout masks are stored activations (Korthikanti et al. 2022, Sec. 4.1)
  NormKind norm = NormKind::LAYERNORM;
  MlpKind mlp = MlpKind::GELU;
  PositionKind position = PositionKind::LEARNED;
  HeadKind head = HeadKind::LM;
  // Numerics.
  Numerics numerics = Numerics::FP16_MIXED;
  AttentionImpl attention = AttentionImpl::MATERIALIZED;
  bool fp32_residual = false;  // residual stream kept in fp32 (Megatron --fp32-residual-connection)
  std::optional<PublishedCount> published;
  // Set for `--params N`: only model states can be computed.
  std::optional<double> raw_params;
  // Keys of a Hugging Face config.json that do not change what we compute, reported back.
  std::vector<std::string> ignored_keys;
  // What a loader assumed while reading (e.g. a float32 checkpoint's training numerics).
  std::vector<std::string> notes;
  // The user's own layer, captured (`--capture`, captured_model.hpp): replaces trainsim's
  // PyTorch layer in the costs of a PyTorch stack.
  std::shared_ptr<const ModelCapture> capture;
  // A Hugging Face family whose layer trainsim has no hand-written model of (huggingface_config.cpp):
  // its layer's kernels, parameters and saved tensors come from a capture, without which it is refused.
  bool layer_from_capture = false;
  std::int64_t head_dim_override = 0;  // config.json head_dim where it is not hidden / heads (0: none)
  std::optional<std::int64_t> sliding_window;  // attention window (tokens); checked against the run's sequence
  std::optional<CapturedParamCounts> captured_params;  // set with the capture of a layer_from_capture model
  // The numerics of the capture the run attaches (planner/request.cpp reads it before the stack's
  // checks): a PyTorch stack runs what its capture recorded (pure bf16, say), not only autocast.
  std::optional<Numerics> capture_numerics;

  bool has_architecture() const { return !raw_params.has_value(); }
  std::int64_t head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  std::int64_t kv_hidden() const { return head_dim() * kv_heads; }
};

}  // namespace trainsim::wl
