#include "activation_memory.hpp"

namespace trainsim::wl {

double activation_element_bytes(Numerics n) { return n == Numerics::FP32 ? 4.0 : 2.0; }
double residual_element_bytes(const ModelSpec& m) { return m.fp32_residual ? 4.0 : activation_element_bytes(m.numerics); }
double residual_tensor_bytes(const ModelSpec& m, std::int64_t micro_batch, std::int64_t seq) {
  return residual_element_bytes(m) * static_cast<double>(micro_batch) * static_cast<double>(seq) * static_cast<double>(m.hidden);
}

LayerActivations layer_activation_bytes(const ModelSpec& m, const ActivationShape& shape) {
  const double s = static_cast<double>(shape.seq), b = static_cast<double>(shape.micro_batch);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double f = static_cast<double>(m.ffn_hidden), kv = static_cast<double>(m.kv_hidden());
  const double t = shape.tp;
  const double e = activation_element_bytes(m.numerics);
  const double residual_e = residual_element_bytes(m);
  // Outside the tensor-parallel regions tensors are replicated across the t ranks, unless
  // sequence parallelism splits them along the sequence (Korthikanti Sec. 4.2.2).
  const double outside = shape.sp ? t : 1.0;
  const double sbh = s * b * h;
  const double mask = m.dropout ? 1.0 : 0.0;  // dropout masks: one byte per element

  // Attention block (Sec. 4.1): norm input, QKV input, Q and K for QK^T, V, projection input,
  // projection dropout mask.
  double replicated = residual_e * sbh + e * sbh + mask * sbh;
  double split = e * s * b * (h + kv) + e * s * b * kv + e * sbh;
  // MLP block: norm input, first linear input, activation input(s), second linear input, mask.
  replicated += residual_e * sbh + e * sbh + mask * sbh;
  split += (m.mlp == MlpKind::GELU ? e * s * b * f : 2.0 * e * s * b * f) + e * s * b * f;
  // The attention matrix terms: softmax output (2as^2b), its dropout mask (as^2b) and the dropout
  // output (2as^2b); flash attention keeps only the fp32 log-sum-exp per row instead.
  double attention_matrix = 0;
  if (m.attention == AttentionImpl::MATERIALIZED) {
    const double as2b = a * s * s * b;
    attention_matrix = e * as2b + (m.dropout ? (mask * as2b + e * as2b) : 0.0);
  } else {
    attention_matrix = 4.0 * a * s * b;
  }
  const double everything = replicated / outside + split / t + attention_matrix / t;

  LayerActivations out;
  out.full = everything;
  switch (shape.recompute) {
    case Recompute::NONE: out.stored = everything; break;
    // Selective recompute drops the attention-matrix terms and recomputes them (Sec. 4.2.3).
    case Recompute::SELECTIVE:
      out.stored = everything - (m.attention == AttentionImpl::MATERIALIZED ? attention_matrix / t : 0.0);
      break;
    // Full recompute keeps only the layer input (Sec. 4.2.1: 2sbh), split by sequence parallelism.
    case Recompute::FULL: out.stored = residual_e * sbh / outside; break;
  }
  return out;
}

double embedding_activation_bytes(const ModelSpec& m, const ActivationShape& shape) {
  if (!m.dropout) return 0.0;
  const double outside = shape.sp ? shape.tp : 1.0;
  return static_cast<double>(shape.seq * shape.micro_batch * m.hidden) / outside;
}

double output_norm_activation_bytes(const ModelSpec& m, const ActivationShape& shape) {
  const double outside = shape.sp ? shape.tp : 1.0;
  const double e = activation_element_bytes(m.numerics);
  const double residual_e = residual_element_bytes(m);
  return (residual_e + e) * static_cast<double>(shape.seq * shape.micro_batch * m.hidden) / outside;
}

double logits_bytes(const ModelSpec& m, const ActivationShape& shape) {
  return 4.0 * static_cast<double>(shape.seq * shape.micro_batch) * static_cast<double>(m.vocab) / shape.tp;
}

}  // namespace trainsim::wl
