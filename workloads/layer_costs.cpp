#include "layer_costs.hpp"

#include <algorithm>

#include "activation_memory.hpp"
#include "stack_model.hpp"

namespace trainsim::wl {

double PassCost::flops() const {
  double f = 0;
  for (const auto& g : gemms) f += g.flops();
  return f;
}

double PassCost::launches_in_entries() const {
  return static_cast<double>(std::count_if(kernels.begin(), kernels.end(), [](const MemoryKernel& k) {
    return k.compute_stream_launch && k.bytes > 0;
  }));
}

double PassCost::bytes() const {
  double b = 0;
  for (const auto& k : kernels) b += k.bytes;
  return b;
}

namespace {

// Backward of C = A B: dA = dC B^T (m x k from m x n and n x k) and dB = A^T dC (k x n from
// k x m and m x n); each as many FLOPs as the forward.
void add_backward_gemms(const Gemm& g, std::vector<Gemm>& out) {
  out.push_back({g.name, g.m, g.k, g.n, g.batch});
  out.push_back({g.name, g.k, g.n, g.m, g.batch});
}

MemoryKernel modern_kernel(const char* name, double bytes, KernelClass generic, const char* torch_curve) {
  MemoryKernel k{name, bytes, true, generic};
  k.curves[0] = {CurveTable::KERNELS, torch_curve};
  return k;
}

PassCost backward_of(const PassCost& fwd) {
  PassCost bwd;
  for (const auto& g : fwd.gemms) add_backward_gemms(g, bwd.gemms);
  // Elementwise backward kernels read the saved input and the incoming gradient and write one
  // gradient: twice the forward traffic is the usual estimate (Korthikanti et al. 2022 keep the
  // same tensors for exactly this use).
  for (const auto& k : fwd.kernels) bwd.kernels.push_back({k.name, 2.0 * k.bytes, true, k.generic, k.curves});
  bwd.fused_attention = fwd.fused_attention;
  bwd.flash = fwd.flash;
  bwd.flash.backward = true;
  return bwd;
}

}  // namespace

namespace {

// The layer's products, and its attention kernel where it is fused.
PassCost layer_products(const ModelSpec& m, const Strategy& s) {
  const double b = static_cast<double>(s.micro_batch), sq = static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double f = static_cast<double>(m.ffn_hidden), kv = static_cast<double>(m.kv_hidden());
  const double t = s.tp, d = h / a;
  const double tokens = b * sq;
  PassCost fwd;
  fwd.gemms.push_back({"qkv", tokens, (h + 2 * kv) / t, h, 1});
  fwd.gemms.push_back({"attention_scores", sq, sq, d, b * a / t});
  fwd.gemms.push_back({"attention_context", sq, d, sq, b * a / t});
  fwd.gemms.push_back({"attention_out", tokens, h, h / t, 1});
  const double up = m.mlp == MlpKind::SWIGLU ? 2 * f : f;
  fwd.gemms.push_back({"mlp_in", tokens, up / t, h, 1});
  fwd.gemms.push_back({"mlp_out", tokens, h, f / t, 1});
  if (m.attention != AttentionImpl::MATERIALIZED) {
    fwd.fused_attention = true;
    fwd.flash = {b * a / t, sq, d, false};
  }
  return fwd;
}

PassCost head_products(const ModelSpec& m, const Strategy& s) {
  PassCost fwd;
  fwd.gemms.push_back({"logits", static_cast<double>(s.micro_batch * s.seq), static_cast<double>(m.vocab) / s.tp,
                       static_cast<double>(m.hidden), 1});
  return fwd;
}

}  // namespace

LayerCost transformer_layer_products(const ModelSpec& m, const Strategy& s) {
  const PassCost fwd = layer_products(m, s);
  return {fwd, backward_of(fwd)};
}

LayerCost output_layer_products(const ModelSpec& m, const Strategy& s) {
  const PassCost fwd = head_products(m, s);
  return {fwd, backward_of(fwd)};
}

LayerCost transformer_layer_cost(const ModelSpec& m, const Strategy& s) {
  if (const auto own = stack_model(s).layer_cost) return own(m, s);
  const double b = static_cast<double>(s.micro_batch), sq = static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
  const double f = static_cast<double>(m.ffn_hidden), kv = static_cast<double>(m.kv_hidden());
  const double t = s.tp;
  const double e = activation_element_bytes(m.numerics);
  const double tokens = b * sq;
  // Outside the tensor-parallel region sequence parallelism splits the tokens.
  const double outside_tokens = s.sp ? tokens / t : tokens;

  PassCost fwd = layer_products(m, s);
  // Memory-bound kernels: read + write of each elementwise pass.
  const double norm = 2.0 * e * outside_tokens * h;
  // The modern layer's kernels carry their own names (RMSNorm, SwiGLU, rotary embeddings), each
  // timed at PyTorch's bf16 kernel for it where the profile calibrated one
  // (calibrate/scripts/torch_microbench.py), else at the generic kernel closest to it.
  if (m.norm == NormKind::RMSNORM) {
    fwd.kernels.push_back(modern_kernel("rmsnorm", 2 * norm, KernelClass::LAYERNORM, "torch_rmsnorm_fwd_bf16"));
  } else {
    fwd.kernels.push_back({"norm", 2 * norm, true, KernelClass::LAYERNORM});  // two norms per layer
  }
  fwd.kernels.push_back({"residual_add", 2 * 3.0 * e * outside_tokens * h});
  if (m.dropout) fwd.kernels.push_back({"dropout", 2 * (e + e + 1) * outside_tokens * h});
  if (m.mlp == MlpKind::SWIGLU) {
    fwd.kernels.push_back(modern_kernel("swiglu", 3.0 * e * tokens * f / t, KernelClass::GELU, "torch_swiglu_fwd_bf16"));
  } else {
    fwd.kernels.push_back({"activation", 2.0 * e * tokens * f / t, true, KernelClass::GELU});
  }
  // Rotary embeddings rotate Q and K: read each with its cos and sin, write it (Su et al. 2021).
  if (m.position == PositionKind::ROTARY) {
    fwd.kernels.push_back(modern_kernel("rotary", 4.0 * e * tokens * (h + kv) / t, KernelClass::COPY, "torch_rotary_fwd_bf16"));
  }
  if (m.attention == AttentionImpl::MATERIALIZED) {
    const double scores = a * sq * sq * b / t;
    fwd.kernels.push_back({"softmax", 2.0 * e * scores, true, KernelClass::SOFTMAX});
    if (m.dropout) fwd.kernels.push_back({"attention_dropout", (e + e + 1) * scores, true, KernelClass::SOFTMAX});
  }
  return {fwd, backward_of(fwd)};
}

LayerCost output_layer_cost(const ModelSpec& m, const Strategy& s) {
  if (const auto own = stack_model(s).output_cost) return own(m, s);
  const double tokens = static_cast<double>(s.micro_batch * s.seq);
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  const double e = activation_element_bytes(m.numerics);
  PassCost fwd = head_products(m, s);
  // Final norm, then the fp32 softmax cross-entropy over the vocabulary shard.
  fwd.kernels.push_back({"final_norm", 2.0 * e * tokens * h / (s.sp ? s.tp : 1), true, KernelClass::LAYERNORM});
  fwd.kernels.push_back({"cross_entropy", (e + 4.0 + 4.0) * tokens * v / s.tp, true, KernelClass::SOFTMAX});
  return {fwd, backward_of(fwd)};
}

LayerCost embedding_cost(const ModelSpec& m, const Strategy& s) {
  if (const auto own = stack_model(s).embedding_cost) return own(m, s);
  const double tokens = static_cast<double>(s.micro_batch * s.seq);
  const double e = activation_element_bytes(m.numerics);
  PassCost fwd;
  fwd.kernels.push_back({"embedding_lookup", 2.0 * e * tokens * static_cast<double>(m.hidden)});
  PassCost bwd;
  bwd.kernels.push_back({"embedding_grad", 3.0 * e * tokens * static_cast<double>(m.hidden)});
  return {fwd, bwd};
}

double adam_bytes_per_param(Numerics n) {
  switch (n) {
    case Numerics::FP16_MIXED:
    case Numerics::BF16_MIXED: return (4 + 4 + 4 + 2) + (4 + 4 + 4 + 2);
    case Numerics::BF16: return (2 + 2 + 2 + 2) + (2 + 2 + 2);
    case Numerics::FP32: return (4 + 4 + 4 + 4) + (4 + 4 + 4);
  }
  return 28;
}

double model_flops_per_step(const ModelSpec& m, const Strategy& s) {
  Strategy unsplit = s;
  unsplit.tp = 1;
  unsplit.sp = false;
  const LayerCost layer = transformer_layer_cost(m, unsplit);
  const LayerCost out = output_layer_cost(m, unsplit);
  const double per_sequence_batch =
      static_cast<double>(m.layers) * (layer.forward.flops() + layer.backward.flops()) + out.forward.flops() +
      out.backward.flops();
  // One micro-batch of every data-parallel replica, times the micro-batches of a step.
  return per_sequence_batch * static_cast<double>(s.dp) * static_cast<double>(s.micro_batches());
}

}  // namespace trainsim::wl
