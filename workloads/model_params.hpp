#pragma once
// Parameter counts, exact per tensor, and the published closed forms they must agree with.

#include <cstdint>
#include <vector>

#include "model.hpp"

namespace trainsim::wl {

// One weight matrix or vector group of a transformer layer. The operators of a layer are the
// units ZeRO-3 gathers one at a time (DeepSpeed gathers per submodule).
struct OperatorParams {
  const char* name;
  std::int64_t params;
  // The part split across tensor-parallel ranks (Megatron column- and row-parallel weights,
  // column-parallel biases); the rest (norms, row-parallel biases) is replicated on every rank.
  std::int64_t tp_split_params;

  double per_tp_rank(int tp) const { return static_cast<double>(params - tp_split_params) + static_cast<double>(tp_split_params) / tp; }
};

std::vector<OperatorParams> layer_operators(const ModelSpec& m);
std::int64_t layer_params(const ModelSpec& m);
double layer_params_per_tp_rank(const ModelSpec& m, int tp);
// Word (+ position + token type) embeddings and the embedding norm (BERT).
std::int64_t embedding_params(const ModelSpec& m);
// Final norm plus the output layer when it is not tied, or BERT's pretraining heads.
std::int64_t head_params(const ModelSpec& m);
// Everything: embeddings + layers + head. For `--params N` models, N.
double total_params(const ModelSpec& m);
// The largest single operator on one tensor-parallel rank, in parameters (embedding table included).
double largest_operator_params(const ModelSpec& m, int tp = 1);

// Parameters held by one rank of pipeline stage `stage` of `pp` with tensor parallelism `tp`
// (Megatron layout: vocabulary-parallel embeddings on the first stage, the output layer on the
// last; a tied embedding is duplicated on the last stage when pp > 1). `stage_layers`: the
// stage's transformer layers (stage_partition.hpp); -1: layers / pp.
double stage_params_per_rank(const ModelSpec& m, int stage, int pp, int tp, int stage_layers = -1);

// Parameters on one tensor-parallel rank: per transformer layer, the embedding part (first
// stage) and the head part (last stage; with a tied embedding, without its copy).
struct RankParams {
  double per_layer = 0;
  double embedding = 0;
  double head = 0;
};
RankParams rank_params(const ModelSpec& m, int tp);

// The parameter tensors (elements each) one tensor-parallel rank holds of a unit of rank_params:
// `layer` -1 the embedding, `layers` the head, else a transformer layer: what a framework that
// handles each parameter on its own sees (FSDP2 shards and copies parameter by parameter). They
// sum to rank_params' figure for that unit; parts the layout below does not name (BERT's heads)
// are one tensor of the remainder.
std::vector<double> parameter_tensors(const ModelSpec& m, int tp, int layer);

// The units ZeRO-3 gathers one at a time (DeepSpeed gathers per submodule), in forward order on
// one tensor-parallel rank: the embedding; per layer the attention input (norm + QKV), the
// attention output projection, the MLP input (norm + up projection) and the MLP output; the
// head (final norm and the output layer, re-gathering a tied embedding).
struct GatherUnit {
  int layer = 0;        // -1 for the embedding, layers for the head
  const char* name = "";
  double params = 0;
};
std::vector<GatherUnit> gather_units(const ModelSpec& m, int tp);
// The most parameters two consecutive units hold: ZeRO-3 computes with one unit while it
// gathers the next.
double largest_adjacent_gather(const ModelSpec& m, int tp);

// Narayanan et al. 2021 (Megatron-LM, "Efficient Large-Scale Language Model Training on GPU
// Clusters"), Sec. 5.1: P = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)). It leaves out the final
// layer norm (2h parameters), which total_params counts.
double megatron_param_formula(double layers, double hidden, double vocab, double seq);

}  // namespace trainsim::wl
