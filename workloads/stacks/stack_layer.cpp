#include "stack_layer.hpp"

#include <algorithm>

#include "captured_model.hpp"
#include "stack_model.hpp"
#include "torch_kernels.hpp"

namespace trainsim::wl {
namespace {

struct Dims {
  double T, h, f, kv, a, s, b, V, up, lp;
  int N;        // data-parallel ranks
  double accumulate;  // share of micro-batches that add into an existing gradient: (M - 1) / M
};

Dims dims(const ModelSpec& m, const Strategy& s) {
  Dims d{};
  d.b = static_cast<double>(s.micro_batch);
  d.s = static_cast<double>(s.seq);
  d.T = d.b * d.s;
  d.h = static_cast<double>(m.hidden);
  d.f = static_cast<double>(m.ffn_hidden);
  d.kv = static_cast<double>(m.kv_hidden());
  d.a = static_cast<double>(m.heads);
  d.V = static_cast<double>(m.vocab);
  d.up = m.mlp == MlpKind::SWIGLU ? 2 * d.f : d.f;
  d.lp = linear_params_per_layer(m);
  d.N = s.dp;
  const double M = std::max<double>(1.0, static_cast<double>(s.micro_batches()));
  d.accumulate = (M - 1) / M;
  return d;
}

bool fsdp(const Strategy& s) { return s.stack.kind == StackKind::PYTORCH_FSDP; }

// The kernels of the norm, residual and activation path: fp32 under autocast (LayerNorm is on
// autocast's fp32 list, residual adds promote), bf16 under FSDP2 (training_stacks.md).
void add_layer_kernels(const ModelSpec& m, const Strategy& s, const Dims& d, PassCost& fwd, PassCost& bwd) {
  const bool bf16 = fsdp(s);
  const bool rms = m.norm == NormKind::RMSNORM;
  const char* norm_f = bf16 ? (rms ? "torch:rmsnorm_fwd_bf16" : "torch:layernorm_fwd_bf16")
                            : (rms ? "torch:rmsnorm_fwd_fp32" : "torch:layernorm_fwd_fp32");
  const char* norm_b = bf16 ? (rms ? "torch:rmsnorm_fwd_bwd_bf16" : "torch:layernorm_fwd_bwd_bf16")
                            : (rms ? "torch:rmsnorm_fwd_bwd_fp32" : "torch:layernorm_fwd_bwd_fp32");
  const double re = bf16 ? 2.0 : 4.0;  // residual-stream element bytes
  const double Th = d.T * d.h;
  // Forward: two norms (read + write the residual dtype), autocast's casts of their outputs to
  // bf16, the reshape copy of the attention output (bf16 read + write), two residual adds
  // (residual + bf16 branch -> residual dtype), the MLP activation.
  fwd.kernels.push_back(torch_kernel(norm_f, 2 * 2 * re * Th));
  if (!bf16) fwd.kernels.push_back(torch_kernel("torch:cast_fp32_to_bf16", 2 * 6 * Th));
  // The reshape copy stays costed though the traces hold no kernel for it (flash attention's output
  // is read through a view): no launch.
  fwd.kernels.push_back(torch_kernel("torch:copy_fp32", 4 * Th, false));
  // Under autocast the residual joins add a bf16 branch output to the fp32 residual: PyTorch's
  // mixed-dtype add, slower than an fp32 add of the same bytes (the layer-kernel calibration,
  // reports/calibration/layer-kernels/).
  fwd.kernels.push_back(torch_kernel(bf16 ? "torch:add_bf16" : "torch:add_fp32_bf16", 2 * (re + 2 + re) * Th));
  // SwiGLU and rotary embeddings run on views of the fused gate-up and QKV outputs (rows strided by
  // the fused width), PyTorch's strided elementwise path: costed at the rate measured so
  // (calibrate/scripts/torch_layer_kernels.py), their backward at the forward's rate per byte.
  if (m.mlp == MlpKind::SWIGLU) fwd.kernels.push_back(torch_kernel("torch:swiglu_split_fwd_bf16", 6 * d.T * d.f));
  else fwd.kernels.push_back(torch_kernel("torch:gelu_fwd_bf16", 4 * d.T * d.f));
  if (m.position == PositionKind::ROTARY) fwd.kernels.push_back(torch_kernel("torch:rotary_split_fwd_bf16", 10 * d.T * (d.h + d.kv)));
  // Backward: the residual gradient cast to bf16 for each branch (autocast), the two gradient
  // sums at the residual joins, norm backward (read input and gradient, write gradient), the cast
  // back of the norm-output gradient, the reshape copy, the activation's backward, the cats that
  // join the gradients of a fused output's parts (QKV; SwiGLU's gate and up), bias-gradient
  // reductions (read each bf16 output gradient once, one column reduction a Linear).
  if (!bf16) bwd.kernels.push_back(torch_kernel("torch:cast_fp32_to_bf16", 2 * 6 * Th));
  bwd.kernels.push_back(torch_kernel(bf16 ? "torch:add_bf16" : "torch:add_fp32", 2 * 3 * re * Th));
  bwd.kernels.push_back(torch_kernel(norm_b, 2 * 3 * re * Th));
  if (!bf16) bwd.kernels.push_back(torch_kernel("torch:cast_bf16_to_fp32", 2 * 6 * Th));
  bwd.kernels.push_back(torch_kernel("torch:copy_fp32", 4 * Th));
  if (m.mlp == MlpKind::SWIGLU) bwd.kernels.push_back(torch_kernel("torch:swiglu_split_bwd_bf16", 10 * d.T * d.f));
  else bwd.kernels.push_back(torch_kernel("torch:gelu_bwd_bf16", 6 * d.T * d.f));
  if (m.position == PositionKind::ROTARY) bwd.kernels.push_back(torch_kernel("torch:rotary_split_fwd_bf16", 10 * d.T * (d.h + d.kv)));
  bwd.kernels.push_back(torch_kernel("torch:split_cat_bf16", 4 * d.T * (d.h + 2 * d.kv)));
  if (m.mlp == MlpKind::SWIGLU) bwd.kernels.push_back(torch_kernel("torch:split_cat_bf16", 4 * d.T * d.up));
  if (m.biases) {
    for (const double out : {d.h + 2 * d.kv, d.h, d.up, d.h}) bwd.kernels.push_back(torch_kernel("torch:bias_grad_bf16", 2 * d.T * out));
  }
  // Grouped-query attention: flash attention's backward writes dK and dV for every query head and
  // sums each group into its key/value head (FlashAttention-2's mha_bwd): read 2 x 2Th, write 2 x 2T kv.
  if (d.kv < d.h) bwd.kernels.push_back(torch_kernel("torch:add_bf16", 4 * d.T * (d.h + d.kv)));
}

// Per-parameter work of `params` parameters in one micro-batch: autocast casts the fp32 weights
// to bf16 in the forward and the bf16 weight gradients to fp32 in the backward, AccumulateGrad
// adds into .grad from the second micro-batch on; FSDP2 casts its fp32 shard to bf16 for each
// all-gather, copies each gathered buffer out into the unit's parameters, converts the unsharded
// bf16 gradients to reduce_dtype and accumulates the reduced shard (training_stacks.md, "FSDP2").
void add_param_kernels(const Strategy& s, const Dims& d, double params, PassCost& fwd, PassCost& bwd) {
  if (fsdp(s)) {
    const double gathers = s.zero_stage >= 3 ? 2.0 : 1.0;
    // FSDP2's own kernels (foreach over the unit's tensors, chunk_cat, split_with_sizes_copy) at
    // the rates calibrate/scripts/torch_microbench.py --parts fsdp_kernels measured for them, where a
    // profile has them (CostModel::kernel_seconds falls back to the plain kernel of the same traffic).
    // The copy-in runs on FSDP2's all-gather copy-in stream, its shard accumulation on its
    // reduce-scatter stream: costed here, launched beside the compute stream.
    fwd.kernels.push_back(torch_kernel("torch:foreach_cast_fp32_to_bf16", gathers * 6 * params / d.N, false));
    // Each all-gather's copy-in (foreach_all_gather's all_gather_copy_in, a foreach copy): the
    // cast bf16 shard read and written into the flat all-gather input, 4 bytes per parameter of
    // the shard per gather. The profiled ZeRO-3 Llama step holds as many of these launches as of
    // the casts (872 each in h200x2_fsdp2-zero3_llama_L32-h4096_mb1x2's trace, 31 and 42 ms: 4 and
    // 6 bytes per shard parameter at one rate; reports/validation/measured/llama-h200x2).
    fwd.kernels.push_back(torch_kernel("torch:foreach_copy_bf16", gathers * 4 * params / d.N, false));
    // Each all-gather's copy-out on the compute stream (foreach_all_gather_copy_out's
    // split_with_sizes_copy): the gathered buffer read and the unit's unsharded parameters written,
    // in param_dtype, once per gather: the forward's, and under ZeRO-3 the backward's again.
    const double copy_out = 2 * dtype_bytes(s.stack.param_dtype) * params;
    fwd.kernels.push_back(torch_kernel("torch:split_copy_bf16", copy_out));
    if (s.zero_stage >= 3) bwd.kernels.push_back(torch_kernel("torch:split_copy_bf16", copy_out));
    // The unsharded bf16 gradients into the fp32 reduce-scatter input (foreach_reduce's chunk_cat).
    if (s.stack.reduce_dtype == TensorDtype::FP32) bwd.kernels.push_back(torch_kernel("torch:chunk_cat_bf16_to_fp32", 6 * params));
    bwd.kernels.push_back(torch_kernel("torch:add_inplace_fp32", d.accumulate * 12 * params / d.N, false));
    return;
  }
  fwd.kernels.push_back(torch_kernel("torch:cast_fp32_to_bf16", 6 * params));
  bwd.kernels.push_back(torch_kernel("torch:cast_bf16_to_fp32", 6 * params));
  bwd.kernels.push_back(torch_kernel("torch:add_inplace_fp32", d.accumulate * 12 * params));
}

// FSDP2's kernels on the compute stream around a unit's compute: the copy-out of the gathered unit
// in the forward; the chunk_cat of the reduce-scatter input and, under ZeRO-3, the copy-out of the
// unit gathered again in the backward.
LayerLaunches fsdp_unit_launches(const Strategy& s) {
  LayerLaunches l;
  if (!fsdp(s)) return l;
  l.forward = 1;
  l.backward = 1 + (s.zero_stage >= 3 ? 1 : 0);
  return l;
}

// The elements of a captured layer's parameter tensors: what FSDP2 gathers and reduces for its unit.
double captured_layer_params(const ModelCapture& cap) {
  double n = 0;
  for (const double p : cap.params.layer) n += p;
  return n;
}

}  // namespace

LayerLaunches torch_layer_launches(const ModelSpec& m, const Strategy& s) {
  // The layer's four Linear modules (fused QKV, the output projection, the fused gate-up or first
  // MLP product, the down or second), as the validation scripts define it (training_stacks.md,
  // "The layer's kernels and layouts").
  const double linears = 4;
  const double biases = m.biases ? linears : 0;
  const double norms = 2;
  const bool autocast = !fsdp(s);
  const bool swiglu = m.mlp == MlpKind::SWIGLU;
  const bool rotary = m.position == PositionKind::ROTARY;
  const bool gqa = m.kv_hidden() < m.hidden;
  LayerLaunches l;
  // Forward: flash attention's kernel; a GEMM a Linear; autocast's casts of each weight and bias and
  // of the two norm outputs; the two residual adds and the two norms; GELU (one kernel) or SwiGLU
  // (SiLU, then the product: two); rotary on the query and the key (rotate_half's negation and cat,
  // two products, a sum: five each); FSDP2's copy-out of the gathered unit.
  const LayerLaunches unit = fsdp_unit_launches(s);
  l.forward = 1 + linears + (autocast ? linears + biases + norms : 0) + 2 + norms + (swiglu ? 2 : 1) + (rotary ? 10 : 0) +
              unit.forward;
  // Backward: flash attention's three (dO.O, the dQ/dK/dV loop, dQ's conversion); the sums of dK
  // and dV over each key/value head's group under grouped-query attention (two reductions); the cats
  // joining a fused output's gradient parts (QKV; SwiGLU's gate and up); two GEMMs a Linear and a
  // column reduction a bias; autocast's casts back of each weight's and bias's gradient and of the
  // two norm outputs' input gradients; a norm's two kernels (input; weight and bias) and the add of
  // the gradient at its residual join, with autocast's cast of that gradient to bf16; GELU's
  // backward (one) or SwiGLU's (three); rotary's backward (five each for query and key); FSDP2's
  // chunk_cat of the reduce-scatter input and, under ZeRO-3, the copy-out of the unit gathered
  // again.
  l.backward = 3 + (gqa ? 2 : 0) + 1 + (swiglu ? 1 : 0) + 2 * linears + biases + (autocast ? linears + biases + 2 : 0) +
               norms * (2 + 1) + (autocast ? norms : 0) + (swiglu ? 3 : 1) + (rotary ? 10 : 0) + unit.backward;
  // AccumulateGrad's add into .grad, a parameter tensor each, from the second micro-batch on (under
  // FSDP2 the sharded gradient accumulates on the reduce-scatter's stream, not here).
  const double tensors = linears + biases + norms * (m.norm == NormKind::RMSNORM ? 1 : 2);
  if (autocast) l.backward += dims(m, s).accumulate * tensors;
  // The checkpointed traces' recompute launches two kernels fewer than the forward (validation call
  // 43: 25 against 27 for the autocast Llama layer, 19 against 22 under FSDP2) and, under FSDP2, no
  // copy-out (the backward's gather already holds the unit).
  l.recompute = l.forward - 2 - unit.forward;
  return l;
}

double linear_params_per_layer(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double kv = static_cast<double>(m.kv_hidden());
  const double bias = m.biases ? 1.0 : 0.0;
  const double qkv = h * (h + 2 * kv) + bias * (h + 2 * kv);
  const double proj = h * h + bias * h;
  const double mlp = m.mlp == MlpKind::SWIGLU ? 3 * h * f + bias * (2 * f + h) : 2 * h * f + bias * (f + h);
  return qkv + proj + mlp;
}

LayerCost torch_layer_cost(const ModelSpec& m, const Strategy& s) {
  if (const ModelCapture* cap = captured_for(m, s)) {
    // The user's layer as captured (casts under autocast included); the stack adds AccumulateGrad's
    // add of each parameter's gradient from the second micro-batch on, or under FSDP2 its own work on
    // the unit (the captured layer's parameters): casts and copies around each gather, the
    // reduce-scatter's input, the shard's accumulation (add_param_kernels), with the copy-out and
    // chunk_cat it launches on the compute stream.
    LayerCost c = cap->costs.layers.at(cap->layer_kind).cost;
    const Dims d = dims(m, s);
    if (fsdp(s)) {
      add_param_kernels(s, d, captured_layer_params(*cap), c.forward, c.backward);
      const LayerLaunches unit = fsdp_unit_launches(s);
      c.forward.launches += unit.forward;
      c.backward.launches += unit.backward;
      return c;
    }
    c.backward.kernels.push_back(torch_kernel("torch:add_inplace_fp32", d.accumulate * 12 * d.lp));
    c.backward.launches += d.accumulate * static_cast<double>(cap->layer_param_tensors);
    return c;
  }
  LayerCost c = transformer_layer_products(m, s);
  const Dims d = dims(m, s);
  add_layer_kernels(m, s, d, c.forward, c.backward);
  add_param_kernels(s, d, d.lp, c.forward, c.backward);
  const LayerLaunches l = torch_layer_launches(m, s);
  c.forward.launches = l.forward;
  c.backward.launches = l.backward;
  return c;
}

double torch_layer_checkpoint_bytes(const ModelSpec& m, const Strategy& s) {
  if (const ModelCapture* cap = captured_for(m, s)) return cap->layer_memory.kept;
  const Dims d = dims(m, s);
  return (fsdp(s) ? 2.0 : 4.0) * d.T * d.h;
}

double torch_autocast_cache_bytes(const ModelSpec& m, const Strategy& s) {
  if (const ModelCapture* cap = captured_for(m, s)) return cap->layer_memory.autocast_cache;
  if (!stack_model(s).autocast || s.recompute != Recompute::FULL) return 0;
  return 2 * linear_params_per_layer(m);
}

PassCost torch_recompute_cost(const ModelSpec& m, const Strategy& s) {
  if (const ModelCapture* cap = captured_for(m, s)) return cap->costs.layers.at(cap->layer_kind).recompute;
  LayerCost c = transformer_layer_products(m, s);
  const Dims d = dims(m, s);
  PassCost unused;
  add_layer_kernels(m, s, d, c.forward, unused);
  if (!fsdp(s)) c.forward.kernels.push_back(torch_kernel("torch:cast_fp32_to_bf16", 6 * d.lp));
  c.forward.launches = torch_layer_launches(m, s).recompute;
  return c.forward;
}

LayerCost torch_output_cost(const ModelSpec& m, const Strategy& s) {
  if (const ModelCapture* cap = captured_for(m, s)) {
    // The head weight as the stack handles it without a capture (below).
    LayerCost c = cap->costs.head;
    const Dims d = dims(m, s);
    if (fsdp(s)) {
      add_param_kernels(s, d, d.V * d.h, c.forward, c.backward);
    } else if (!m.tied_embeddings) {
      c.backward.kernels.push_back(torch_kernel("torch:add_inplace_fp32", d.accumulate * 12 * d.V * d.h));
      c.backward.launches += d.accumulate;
    }
    return c;
  }
  LayerCost c = output_layer_products(m, s);
  const Dims d = dims(m, s);
  const bool bf16 = fsdp(s);
  const double re = bf16 ? 2.0 : 4.0, Th = d.T * d.h, TV = d.T * d.V;
  // Final norm (and autocast's cast of its output), the loss's .float() of the bf16 logits, the
  // cross-entropy (log_softmax + nll_loss; the calibrated kernel counts 20 bytes per logit for
  // forward and backward together: 8 forward, 12 backward), the logits gradient cast back to
  // bf16; the head weight handled like a layer's (tied: the embedding's own copy). The final norm is
  // the model's own (LayerNorm or RMSNorm).
  const bool rms = m.norm == NormKind::RMSNORM;
  const char* norm_f = bf16 ? (rms ? "torch:rmsnorm_fwd_bf16" : "torch:layernorm_fwd_bf16")
                            : (rms ? "torch:rmsnorm_fwd_fp32" : "torch:layernorm_fwd_fp32");
  const char* norm_b = bf16 ? (rms ? "torch:rmsnorm_fwd_bwd_bf16" : "torch:layernorm_fwd_bwd_bf16")
                            : (rms ? "torch:rmsnorm_fwd_bwd_fp32" : "torch:layernorm_fwd_bwd_fp32");
  c.forward.kernels.push_back(torch_kernel(norm_f, 2 * re * Th));
  if (!bf16) c.forward.kernels.push_back(torch_kernel("torch:cast_fp32_to_bf16", 6 * Th));
  c.forward.kernels.push_back(torch_kernel("torch:cast_bf16_to_fp32", 6 * TV));
  c.forward.kernels.push_back(torch_kernel("torch:cross_entropy_fwd_bwd_fp32", 8 * TV));
  c.backward.kernels.push_back(torch_kernel("torch:cross_entropy_fwd_bwd_fp32", 12 * TV));
  c.backward.kernels.push_back(torch_kernel("torch:cast_fp32_to_bf16", 6 * TV));
  c.backward.kernels.push_back(torch_kernel(norm_b, 3 * re * Th));
  if (!bf16) c.backward.kernels.push_back(torch_kernel("torch:cast_bf16_to_fp32", 6 * Th));
  add_param_kernels(s, d, d.V * d.h, c.forward, c.backward);
  return c;
}

LayerCost torch_embedding_cost(const ModelSpec& m, const Strategy& s) {
  const Dims d = dims(m, s);
  if (const ModelCapture* cap = captured_for(m, s)) {
    // The token embedding as the stack handles it without a capture (below): under FSDP2 an untied
    // one is gathered, cast and reduced like any weight.
    LayerCost c = cap->costs.embedding;
    if (fsdp(s)) {
      if (!m.tied_embeddings) add_param_kernels(s, d, d.V * d.h, c.forward, c.backward);
      return c;
    }
    c.backward.kernels.push_back(torch_kernel("torch:add_inplace_fp32", d.accumulate * 12 * d.V * d.h));
    c.backward.launches += d.accumulate;
    return c;
  }
  const double re = fsdp(s) ? 2.0 : 4.0, Th = d.T * d.h;
  const bool learned = m.position == PositionKind::LEARNED;
  LayerCost c;
  // The token lookup (read + write the residual dtype; the position lookup, s x h rows shared by
  // the micro-batch, is left out), and with learned positions their sum; a model with rotary (or
  // no) positions adds nothing.
  c.forward.kernels.push_back(torch_kernel("torch:copy_fp32", 2 * re * Th));
  if (learned) c.forward.kernels.push_back(torch_kernel(fsdp(s) ? "torch:add_bf16" : "torch:add_fp32", 3 * re * Th));
  // The embedding's backward scatters T rows into a zeroed V x h gradient.
  c.backward.kernels.push_back(torch_kernel("torch:copy_fp32", 2 * re * Th + re * d.V * d.h));
  // Untied, the token embedding is a weight of its own beside the head's (torch_output_cost): under
  // FSDP2 it is gathered, cast and reduced like any; under autocast it is not cast (embedding runs
  // in fp32), and only AccumulateGrad adds into its .grad from the second micro-batch on.
  if (!m.tied_embeddings) {
    const double params = d.V * d.h;
    if (fsdp(s)) add_param_kernels(s, d, params, c.forward, c.backward);
    else c.backward.kernels.push_back(torch_kernel("torch:add_inplace_fp32", d.accumulate * 12 * params));
  }
  return c;
}

double torch_layer_saved_bytes(const ModelSpec& m, const Strategy& s) {
  // A capture: what its layer keeps, with a checkpointed layer's recompute re-materializing the rest.
  if (const ModelCapture* cap = captured_for(m, s)) return cap->layer_memory.kept + cap->layer_memory.recomputed;
  const Dims d = dims(m, s);
  const bool bf16 = fsdp(s);
  const double re = bf16 ? 2.0 : 4.0;
  // Layer input and the sum after attention (residual dtype, saved by the norms), the norm
  // outputs' bf16 casts (saved by QKV and FC1; under FSDP2 the bf16 norm outputs themselves),
  // Q, K, V (through flash attention's views of the QKV output), the attention output (saved by
  // flash attention, and by the projection through a view: flash attention writes it as [b, s,
  // heads, head_dim], so the transpose and reshape copy nothing), the MLP's input(s) to the
  // activation and its output (FC2's input), flash attention's fp32 log-sum-exp
  // (training_stacks.md, "autocast" and "FSDP2").
  double bytes = 2 * re * d.T * d.h + 2 * 2 * d.T * d.h + 2 * d.T * (d.h + 2 * d.kv) + 2 * d.T * d.h +
                 2 * d.T * d.up + 2 * d.T * d.f + 4 * d.a * d.T;
  // Rotary embeddings make new Q and K (flash attention saves the rotated ones, while V's view keeps
  // the QKV output alive); the rotation's multiplications save only the cos and sin tables.
  if (m.position == PositionKind::ROTARY) bytes += 2 * d.T * (d.h + d.kv);
  // SwiGLU: silu(gate) * up saves both factors, the SiLU output a new tensor (gate and up are views
  // of the fused input GEMM's output, saved through the SiLU's input).
  if (m.mlp == MlpKind::SWIGLU) bytes += 2 * d.T * d.f;
  if (m.attention == AttentionImpl::MATERIALIZED) bytes += 2 * d.a * d.s * d.T;  // softmax output
  // Autocast's bf16 weight copies, saved by each Linear for this micro-batch's backward.
  if (stack_model(s).autocast) bytes += 2 * d.lp;
  return bytes;
}

TorchLossBytes torch_loss_bytes(const ModelSpec& m, const Strategy& s) {
  if (const ModelCapture* cap = captured_for(m, s)) return {cap->head_memory.kept, cap->head_memory.backward_extra};
  const Dims d = dims(m, s);
  const double TV = d.T * d.V;
  TorchLossBytes l;
  // log_softmax's saved fp32 output; the single-GPU and DDP scripts keep the bf16 logits in a
  // Python variable, a pipeline stage keeps its output (the bf16 logits) for the backward.
  l.kept = 4 * TV;
  if (s.stack.kind != StackKind::PYTORCH_FSDP) l.kept += 2 * TV;
  // The backward of log_softmax: the incoming gradient and the result.
  l.backward_extra = 8 * TV;
  // Autocast's bf16 copy of the (tied) head weight, saved by F.linear.
  if (stack_model(s).autocast) l.kept += 2 * d.V * d.h;
  return l;
}

}  // namespace trainsim::wl
