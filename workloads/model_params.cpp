#include "model_params.hpp"

#include <algorithm>

namespace trainsim::wl {
namespace {
std::int64_t norm_params(const ModelSpec& m) { return m.norm == NormKind::LAYERNORM ? 2 * m.hidden : m.hidden; }

std::int64_t sum_of(const std::vector<double>& tensors) {
  double n = 0;
  for (double t : tensors) n += t;
  return static_cast<std::int64_t>(n);
}
}  // namespace

std::vector<OperatorParams> layer_operators(const ModelSpec& m) {
  // A captured layer is one unit: PyTorch's stacks that run captures split and gather no operators.
  if (m.captured_params) return {{"layer", sum_of(m.captured_params->layer), 0}};
  const std::int64_t h = m.hidden, f = m.ffn_hidden, kv = m.kv_hidden();
  const std::int64_t b = m.biases ? 1 : 0;
  std::vector<OperatorParams> ops;
  ops.push_back({"attention_norm", norm_params(m), 0});
  ops.push_back({"qkv", h * (h + 2 * kv) + b * (h + 2 * kv), h * (h + 2 * kv) + b * (h + 2 * kv)});
  ops.push_back({"attention_out", h * h + b * h, h * h});
  ops.push_back({"mlp_norm", norm_params(m), 0});
  if (m.mlp == MlpKind::GELU) {
    ops.push_back({"mlp_in", h * f + b * f, h * f + b * f});
  } else {
    ops.push_back({"mlp_gate_up", 2 * h * f + b * 2 * f, 2 * h * f + b * 2 * f});
  }
  ops.push_back({"mlp_out", f * h + b * h, f * h});
  return ops;
}

std::int64_t layer_params(const ModelSpec& m) {
  std::int64_t total = 0;
  for (const auto& op : layer_operators(m)) total += op.params;
  return total;
}

double layer_params_per_tp_rank(const ModelSpec& m, int tp) {
  double total = 0;
  for (const auto& op : layer_operators(m)) total += op.per_tp_rank(tp);
  return total;
}

std::int64_t embedding_params(const ModelSpec& m) {
  if (m.captured_params) return sum_of(m.captured_params->embedding);
  std::int64_t p = m.vocab * m.hidden;
  if (m.position == PositionKind::LEARNED) p += m.seq_len * m.hidden;
  p += m.type_vocab * m.hidden;
  // BERT normalizes the embeddings (post-LN); pre-LN GPT-style models normalize at the end instead.
  if (m.head == HeadKind::BERT_PRETRAINING) p += norm_params(m);
  return p;
}

std::int64_t head_params(const ModelSpec& m) {
  if (m.captured_params) return sum_of(m.captured_params->head);
  const std::int64_t h = m.hidden;
  if (m.head == HeadKind::BERT_PRETRAINING) {
    // Devlin et al. 2019 / Hugging Face BertForPreTraining: pooler (h*h + h), MLM transform
    // (h*h + h) with its norm, MLM decoder bias (weights tied to the embedding), NSP (2h + 2).
    std::int64_t p = (h * h + h) + (h * h + h) + norm_params(m) + m.vocab + (2 * h + 2);
    if (!m.tied_embeddings) p += m.vocab * h;
    return p;
  }
  std::int64_t p = norm_params(m);
  if (!m.tied_embeddings) p += m.vocab * h;
  return p;
}

double total_params(const ModelSpec& m) {
  if (m.raw_params) return *m.raw_params;
  return static_cast<double>(embedding_params(m) + m.layers * layer_params(m) + head_params(m));
}

double largest_operator_params(const ModelSpec& m, int tp) {
  double largest = static_cast<double>(m.vocab * m.hidden) / tp;
  for (const auto& op : layer_operators(m)) largest = std::max(largest, op.per_tp_rank(tp));
  return largest;
}

RankParams rank_params(const ModelSpec& m, int tp) {
  RankParams r;
  if (m.captured_params) {  // tp is 1 where a capture runs (captured_model.cpp)
    return {static_cast<double>(layer_params(m)), static_cast<double>(embedding_params(m)), static_cast<double>(head_params(m))};
  }
  const double word_embedding = static_cast<double>(m.vocab * m.hidden);
  r.per_layer = layer_params_per_tp_rank(m, tp);
  r.embedding = static_cast<double>(embedding_params(m)) - word_embedding + word_embedding / tp;
  r.head = static_cast<double>(head_params(m));
  if (!m.tied_embeddings) r.head += -word_embedding + word_embedding / tp;
  return r;
}

std::vector<double> parameter_tensors(const ModelSpec& m, int tp, int layer) {
  if (m.captured_params) {
    return layer < 0 ? m.captured_params->embedding : layer >= m.layers ? m.captured_params->head : m.captured_params->layer;
  }
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden), kv = static_cast<double>(m.kv_hidden());
  const bool b = m.biases;
  const RankParams r = rank_params(m, tp);
  std::vector<double> t;
  auto norm = [&] {  // weight, and bias for LayerNorm (norm_params)
    for (std::int64_t n = norm_params(m); n > 0; n -= m.hidden) t.push_back(h);
  };
  double total = r.per_layer;
  if (layer < 0) {
    total = r.embedding;
    t.push_back(static_cast<double>(m.vocab) * h / tp);
    if (m.position == PositionKind::LEARNED) t.push_back(static_cast<double>(m.seq_len) * h);
    if (m.type_vocab > 0) t.push_back(static_cast<double>(m.type_vocab) * h);
  } else if (layer >= m.layers) {
    total = r.head;
    norm();
    if (!m.tied_embeddings) t.push_back(static_cast<double>(m.vocab) * h / tp);
  } else {
    // layer_operators' weights and biases: column-parallel ones split over tp, row-parallel
    // biases and norms replicated.
    norm();
    t.push_back(h * (h + 2 * kv) / tp);
    if (b) t.push_back((h + 2 * kv) / tp);
    t.push_back(h * h / tp);
    if (b) t.push_back(h);
    norm();
    const double up = m.mlp == MlpKind::GELU ? f : 2 * f;
    t.push_back(h * up / tp);
    if (b) t.push_back(up / tp);
    t.push_back(f * h / tp);
    if (b) t.push_back(h);
  }
  double sum = 0;
  for (double x : t) sum += x;
  if (total - sum >= 1) t.push_back(total - sum);
  return t;
}

std::vector<GatherUnit> gather_units(const ModelSpec& m, int tp) {
  const RankParams r = rank_params(m, tp);
  const auto ops = layer_operators(m);
  auto rank = [&](const char* name) {
    for (const auto& op : ops) {
      if (std::string_view(op.name) == name) return op.per_tp_rank(tp);
    }
    return 0.0;
  };
  const double norm = rank("attention_norm");
  const double up = m.mlp == MlpKind::GELU ? rank("mlp_in") : rank("mlp_gate_up");
  std::vector<GatherUnit> units;
  units.push_back({-1, "embedding", r.embedding});
  for (int l = 0; l < static_cast<int>(m.layers); ++l) {
    units.push_back({l, "attention_in", norm + rank("qkv")});
    units.push_back({l, "attention_out", rank("attention_out")});
    units.push_back({l, "mlp_in", norm + up});
    units.push_back({l, "mlp_out", rank("mlp_out")});
  }
  const double tied = m.tied_embeddings ? static_cast<double>(m.vocab * m.hidden) / tp : 0.0;
  units.push_back({static_cast<int>(m.layers), "head", r.head + tied});
  return units;
}

double largest_adjacent_gather(const ModelSpec& m, int tp) {
  const auto units = gather_units(m, tp);
  double best = units.front().params;
  for (std::size_t i = 1; i < units.size(); ++i) best = std::max(best, units[i - 1].params + units[i].params);
  return best;
}

double stage_params_per_rank(const ModelSpec& m, int stage, int pp, int tp, int stage_layers) {
  if (m.raw_params) return *m.raw_params;
  const RankParams r = rank_params(m, tp);
  double p = static_cast<double>(stage_layers >= 0 ? stage_layers : m.layers / pp) * r.per_layer;
  if (stage == 0) p += r.embedding;
  if (stage == pp - 1) {
    p += r.head;
    // Megatron keeps a copy of a tied word embedding on the last stage to compute the logits.
    if (m.tied_embeddings && pp > 1) p += static_cast<double>(m.vocab * m.hidden) / tp;
  }
  return p;
}

double megatron_param_formula(double l, double h, double V, double s) {
  return 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (V + s) / (12.0 * l * h));
}

}  // namespace trainsim::wl
