#pragma once
// The reference step's GPT (issue 11): a pre-LN GPT-2-style decoder, the same module as
// reports/validation/scripts/model.py (learned positions, fused QKV with bias, GELU MLP of 4h,
// tied LM head, no dropout), and the flat layout of its parameters. The layout is shared by the
// CPU fp64 reference and the GPU step, so a gradient can be compared element by element, and it
// is cut into units (embedding, one per layer, final LayerNorm) that ZeRO-3 shards and gathers.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::calibrate::ref {

struct GptConfig {
  int layers = 2;
  int hidden = 64;
  int heads = 4;
  int vocab = 128;
  int seq = 32;
  int micro_batch = 2;  // sequences per micro-batch
  int head_dim() const { return hidden / heads; }
  std::int64_t tokens() const { return static_cast<std::int64_t>(micro_batch) * seq; }
};

// Parameters of the module, as Megatron-LM counts them (Narayanan et al. 2021, eq. 2 without the
// untied head): L (12 h^2 + 13 h) + (V + s) h + 2 h.
std::int64_t gpt_param_count(const GptConfig& c);

// The tensors of one transformer layer, in their order inside the layer's unit.
enum LayerTensor : int {
  LN1_G, LN1_B, W_QKV, B_QKV, W_O, B_O, LN2_G, LN2_B, W_FC1, B_FC1, W_FC2, B_FC2, LAYER_TENSORS
};
// Embedding unit: token embedding [V, h] (also the LM head), positions [s, h].
enum EmbedTensor : int { WTE, WPE, EMBED_TENSORS };
// Final unit: the last LayerNorm.
enum FinalTensor : int { LNF_G, LNF_B, FINAL_TENSORS };

struct TensorSlot {
  std::string name;
  std::size_t offset = 0;  // elements from the start of the flat buffer
  std::size_t rows = 0, cols = 0;
  std::size_t size() const { return rows * cols; }
};

struct Unit {
  std::size_t offset = 0;  // elements from the start of the flat buffer
  std::size_t size = 0;    // padded to a multiple of `shard_multiple`
  std::vector<TensorSlot> tensors;
};

struct ParamLayout {
  std::vector<Unit> units;  // 0: embedding, 1..L: layers, L + 1: final LayerNorm
  std::size_t total = 0;    // elements, padding included
  std::int64_t params = 0;  // without padding
  const TensorSlot& embed(EmbedTensor t) const { return units.front().tensors[t]; }
  const TensorSlot& layer(int l, LayerTensor t) const { return units[1 + l].tensors[t]; }
  const TensorSlot& final_ln(FinalTensor t) const { return units.back().tensors[t]; }
};

// Every tensor starts at a multiple of 64 elements (128-byte aligned in bf16); every unit's size
// is a multiple of 64 * `shards`, so each of `shards` ranks owns an aligned, equal slice.
ParamLayout make_layout(const GptConfig& c, int shards);

// Deterministic initial values (the same on CPU and GPU): weights uniform with standard deviation
// 0.02 (GPT-2), biases small, LayerNorm gains near 1, padding 0.
// The same values element by element as init_hash.hpp's initial_value (tensor ids from 1 in layout
// order); the GPU fills its shards with that function directly.
std::vector<float> initial_params(const ParamLayout& layout);
int init_kind(const TensorSlot& t);

// A fixed synthetic batch: micro_batch sequences of seq tokens and their next-token targets,
// drawn from a hash of (seed, position).
struct Batch {
  std::vector<std::int32_t> tokens, targets;  // [micro_batch * seq]
};
Batch synthetic_batch(const GptConfig& c, std::uint64_t seed);

// Pipeline stages' layers: as even as possible, the first (layers mod stages) one more (as the
// PyTorch rows' layers_per_stage).
std::vector<int> split_layers(int layers, int stages);

// Checks the shape (heads divide hidden, positive sizes); throws std::invalid_argument naming
// the option.
void validate(const GptConfig& c);

}  // namespace trainsim::calibrate::ref
