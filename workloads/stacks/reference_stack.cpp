#include "reference_stack.hpp"

#include <algorithm>

#include "model_params.hpp"
#include "training_stack.hpp"

namespace trainsim::wl {
namespace {

struct Dims {
  double T, h, f, a, s, V, sq;  // tokens of a micro-batch, ..., b a s^2 (one attention matrix per head)
};

Dims dims(const ModelSpec& m, const Strategy& s) {
  Dims d{};
  d.s = static_cast<double>(s.seq);
  d.T = static_cast<double>(s.micro_batch) * d.s;
  d.h = static_cast<double>(m.hidden);
  d.f = static_cast<double>(m.ffn_hidden);
  d.a = static_cast<double>(m.heads);
  d.V = static_cast<double>(m.vocab);
  d.sq = static_cast<double>(s.micro_batch) * d.a * d.s * d.s;
  return d;
}

}  // namespace

MemoryKernel reference_kernel(ReferenceKernel k, double rows, double cols) {
  const char* name = "?";
  switch (k) {
    case ReferenceKernel::LAYERNORM_FWD: name = "ref:layernorm_fwd"; break;
    case ReferenceKernel::LAYERNORM_BWD_INPUT: name = "ref:layernorm_bwd_input"; break;
    case ReferenceKernel::LAYERNORM_BWD_PARAMS: name = "ref:layernorm_bwd_params"; break;
    case ReferenceKernel::SPLIT_QKV: name = "ref:split_qkv"; break;
    case ReferenceKernel::MERGE_HEADS: name = "ref:merge_heads"; break;
    case ReferenceKernel::SPLIT_HEADS: name = "ref:split_heads"; break;
    case ReferenceKernel::MERGE_QKV_GRAD: name = "ref:merge_qkv_grad"; break;
    case ReferenceKernel::CAUSAL_SOFTMAX_FWD: name = "ref:causal_softmax_fwd"; break;
    case ReferenceKernel::CAUSAL_SOFTMAX_BWD: name = "ref:causal_softmax_bwd"; break;
    case ReferenceKernel::COLUMN_SUM_FP32: name = "ref:column_sum_fp32"; break;
    case ReferenceKernel::COLUMN_SUM_BF16: name = "ref:column_sum_bf16"; break;
    case ReferenceKernel::ADAM: name = "ref:adam"; break;
    case ReferenceKernel::CAST_FP32_TO_BF16: name = "ref:cast_fp32_to_bf16"; break;
    case ReferenceKernel::ADD_INPLACE_FP32: name = "ref:add_inplace_fp32"; break;
  }
  // Its own class's curve where calibrated; else the generic kernel of its access pattern (the
  // LayerNorms at bf16 LayerNorm's, the causal softmax at the dense softmax's, the rest at the copy's).
  MemoryKernel out{name, reference_kernel_bytes(k, rows, cols)};
  out.curves[0] = {CurveTable::REFERENCE_KERNELS, reference_kernel_class(k)};
  switch (k) {
    case ReferenceKernel::LAYERNORM_FWD:
    case ReferenceKernel::LAYERNORM_BWD_INPUT:
    case ReferenceKernel::LAYERNORM_BWD_PARAMS: out.generic = KernelClass::LAYERNORM; break;
    case ReferenceKernel::CAUSAL_SOFTMAX_FWD:
    case ReferenceKernel::CAUSAL_SOFTMAX_BWD: out.generic = KernelClass::SOFTMAX; break;
    default: break;
  }
  return out;
}

// Every cuBLASLt product writes fp32 (ref_gemm.cpp): the layer's Linear outputs are small beside
// their FLOPs, but the two s x s products per head (scores forward, dP backward) are bound by
// their fp32 output; the GEMM's own roofline floor counts a 16-bit output, the other 2 bytes per
// element are listed as `fp32_scores` (training_stacks.md, "trainsim-reference").
LayerCost reference_layer_cost(const ModelSpec& m, const Strategy& s) {
  LayerCost c = transformer_layer_products(m, s);  // the GEMMs (attention materialized)
  const Dims d = dims(m, s);
  const double Th = d.T * d.h, Tf = d.T * d.f;
  auto& fk = c.forward.kernels;
  auto& bk = c.backward.kernels;
  using K = ReferenceKernel;
  const double rows_sq = d.sq / d.s;  // batch x heads x seq rows of s scores
  // Forward (ref_model.cpp layer_forward), one entry per launch:
  fk.push_back(reference_kernel(K::LAYERNORM_FWD, d.T, d.h));
  fk.push_back(reference_kernel(K::SPLIT_QKV, d.T, d.h));
  fk.push_back({"fp32_scores", 2 * d.sq});                   // scores GEMM's fp32 output beyond 16 bits
  fk.push_back(reference_kernel(K::CAUSAL_SOFTMAX_FWD, rows_sq, d.s));
  fk.push_back(reference_kernel(K::MERGE_HEADS, d.T, d.h));
  fk.push_back({"bias_residual", 12 * Th});                  // fp32 residual add (x, branch -> out)
  fk.push_back(reference_kernel(K::LAYERNORM_FWD, d.T, d.h));
  fk.push_back({"activation", (4 + 2 + 2) * Tf, true, KernelClass::GELU});  // fp32 FC1 + bias -> bf16 pre and GELU
  fk.push_back({"bias_residual", 12 * Th});
  // Backward (layer_backward): casts of the fp32 residual gradient for each branch, bias column
  // sums (fp32 [T, h] twice, bf16 [T, 4h] and [T, 3h]), GELU backward (fp32 dact, bf16 pre ->
  // bf16), two LayerNorm backwards (parameter sums reading dy and x, input gradient reading dy, x
  // and accumulating into dx), the head split of dO, dP's fp32 output, the softmax backward (causal
  // half of P and dP in, bf16 dS out), dq, dk, dv merged into bf16 dqkv.
  bk.push_back({"to_bf16", 2 * (4 + 2) * Th});
  bk.push_back(reference_kernel(K::COLUMN_SUM_FP32, d.T, d.h));
  bk.push_back({"activation", (4 + 2 + 2) * Tf, true, KernelClass::GELU});
  bk.push_back(reference_kernel(K::COLUMN_SUM_BF16, d.T, d.f));
  for (int ln = 0; ln < 2; ++ln) {
    bk.push_back(reference_kernel(K::LAYERNORM_BWD_PARAMS, d.T, d.h));
    bk.push_back(reference_kernel(K::LAYERNORM_BWD_INPUT, d.T, d.h));
  }
  bk.push_back(reference_kernel(K::COLUMN_SUM_FP32, d.T, d.h));
  bk.push_back(reference_kernel(K::SPLIT_HEADS, d.T, d.h));
  bk.push_back({"fp32_scores", 2 * d.sq});
  bk.push_back(reference_kernel(K::CAUSAL_SOFTMAX_BWD, rows_sq, d.s));
  bk.push_back(reference_kernel(K::MERGE_QKV_GRAD, d.T, d.h));
  bk.push_back(reference_kernel(K::COLUMN_SUM_BF16, d.T, 3 * d.h));
  return c;
}

LayerCost reference_output_cost(const ModelSpec& m, const Strategy& s) {
  LayerCost c = output_layer_products(m, s);
  const Dims d = dims(m, s);
  // Final LayerNorm (fp32 in, bf16 out); the head GEMM writes fp32 logits; one cross-entropy
  // kernel reads them (three passes of a row, the row stays in cache) and writes the bf16 logits
  // gradient in the forward; the backward is the LayerNorm's.
  c.forward.kernels.push_back(reference_kernel(ReferenceKernel::LAYERNORM_FWD, d.T, d.h));
  c.forward.kernels.push_back({"cross_entropy", (4 + 2 + 2) * d.T * d.V, true, KernelClass::SOFTMAX});
  c.backward.kernels.push_back(reference_kernel(ReferenceKernel::LAYERNORM_BWD_PARAMS, d.T, d.h));
  c.backward.kernels.push_back(reference_kernel(ReferenceKernel::LAYERNORM_BWD_INPUT, d.T, d.h));
  return c;
}

LayerCost reference_embedding_cost(const ModelSpec& m, const Strategy& s) {
  const Dims d = dims(m, s);
  LayerCost c;
  // Lookup of two bf16 rows, fp32 sum out; backward: atomic adds of the fp32 gradient into both.
  c.forward.kernels.push_back({"embedding_lookup", (2 + 2 + 4) * d.T * d.h});
  c.backward.kernels.push_back({"embedding_grad", (4 + 2 * 8) * d.T * d.h});
  return c;
}

ReferenceActivations reference_activations(const ModelSpec& m, const Strategy& s) {
  const Dims d = dims(m, s);
  const double Th = d.T * d.h;
  // ref_model.cpp allocate: per layer and slot its fp32 output x (4Th) and the saved set: ln1,
  // q, k, v, attn, ln2 (bf16), P (bf16, b a s^2), x_mid (fp32), pre and act (bf16 [T, 4h]), two
  // LayerNorms' fp32 mean and rstd (16 T).
  const double saved = 2 * Th + 6 * Th + 2 * d.sq + 2 * Th + 4 * Th + 2 * Th + 2 * 2 * d.T * d.f + 16 * d.T;
  ReferenceActivations a;
  a.full = 4 * Th + saved;
  // --recompute layer keeps each layer's output only; one saved set is re-materialized at a time.
  a.stored = s.recompute == Recompute::NONE ? a.full : 4 * Th;
  a.embedding = 4 * Th;
  a.output = 2 * Th + 8 * d.T;
  return a;
}

double reference_resident_bytes(const ModelSpec& m, const Strategy& s, bool last_stage) {
  const Dims d = dims(m, s);
  const double Th = d.T * d.h;
  // Work buffers: fp32 scratch [T, 4h], fp32 scores and bf16 dS (b a s^2 each), fp32 dx, bf16
  // da and db [T, 4h]; tokens and targets (int32) of every micro-batch the rank holds.
  double bytes = 4 * d.T * d.f + 4 * d.sq + 2 * d.sq + 4 * Th + 2 * 2 * d.T * d.f;
  bytes += 8 * d.T * (s.pp == 1 ? static_cast<double>(s.micro_batches()) : 1.0);
  // The head: fp32 logits and bf16 logits gradient, one micro-batch at a time (the head's
  // backward follows its forward at once).
  if (last_stage) bytes += (4 + 2) * d.T * d.V;
  if (s.pp == 1 && (s.dp > 1 || s.offload_params != OffloadTarget::NONE)) {
    // ZeRO-3 (ref_param_store.cpp): full fp32 gradients of the embedding, the final LayerNorm and
    // two layers, reduce-scatter and cast staging of the largest unit's shard. The gathered bf16
    // units are the simulator's GATHERED memory.
    const RankParams r = rank_params(m, 1);
    const double fin = 2 * d.h;
    const double largest = std::max({r.embedding, r.per_layer, fin});
    bytes += 4 * r.embedding + 4 * fin + 2 * 4 * r.per_layer + (4 + 2) * largest / s.dp;
    // ZeRO-Infinity accumulates the reduce-scattered fp32 gradient shard on the GPU before its copy
    // to the host: the states tier holds the other copy.
    if (s.offload_optimizer != OffloadTarget::NONE) {
      bytes += 4 * (r.embedding + fin + static_cast<double>(m.layers) * r.per_layer) / s.dp;
    }
  }
  return bytes;
}

}  // namespace trainsim::wl
