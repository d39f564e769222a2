#include "ref_model.hpp"

#include <algorithm>
#include <cmath>

#include "cuda_check.hpp"

namespace trainsim::calibrate::ref {
namespace {

// Row-major nn.Linear products (Y = X W^T; dX = dY W; dW += dY^T X) and attention's batched ones.
GemmArgs batched(bool ta, bool tb, int m, int n, int k, const bf16* a, int lda, long long sa, const bf16* b, int ldb,
                 long long sb, float* c, int ldc, long long sc, int batch, float alpha, float beta = 0) {
  GemmArgs g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = lda;
  g.b = b;
  g.ldb = ldb;
  g.c = c;
  g.ldc = ldc;
  g.alpha = alpha;
  g.beta = beta;
  g.batch = batch;
  g.stride_a = sa;
  g.stride_b = sb;
  g.stride_c = sc;
  return g;
}
GemmArgs linear_fwd(const bf16* x, const bf16* wt, float* y, int rows, int in, int out) {
  return batched(false, true, rows, out, in, x, in, 0, wt, in, 0, y, out, 0, 1, 1);
}
GemmArgs linear_dgrad(const bf16* dy, const bf16* wt, float* dx, int rows, int in, int out) {
  return batched(false, false, rows, in, out, dy, out, 0, wt, in, 0, dx, in, 0, 1, 1);
}
GemmArgs linear_wgrad(const bf16* dy, const bf16* x, float* dw, int rows, int in, int out) {
  return batched(true, false, out, in, rows, dy, out, 0, x, in, 0, dw, in, 0, 1, 1, 1);
}

}  // namespace

const bf16* GptGpu::w(const bf16* unit, int l, LayerTensor t) const {
  return unit + (layout_.layer(l, t).offset - layout_.units[1 + l].offset);
}
float* GptGpu::g(float* unit, int l, LayerTensor t) const {
  return unit + (layout_.layer(l, t).offset - layout_.units[1 + l].offset);
}

GptGpu::GptGpu(const GptConfig& c, const ParamLayout& layout, bool recompute, StageSpec stage, bool host_checkpoints)
    : c_(c), layout_(layout), recompute_(recompute), st_(stage) {
  if (st_.end_layer < 0) st_.end_layer = c.layers;
  if (host_checkpoints) {
    // reference_options.cpp refuses the other cases; this guards the class's own use.
    if (!recompute || st_.first_layer != 0 || st_.end_layer != c.layers || !st_.embed || !st_.head || st_.slots != 1) {
      throw CalibrationError("host checkpoints need --recompute layer and the whole model on one GPU (no pipeline)");
    }
    host_ = std::make_unique<HostCheckpoints>(c.layers, static_cast<std::size_t>(c.tokens()) * c.hidden);
  }
}

void GptGpu::allocate(Arena& a) {
  const std::size_t T = static_cast<std::size_t>(c_.tokens()), h = c_.hidden, S = c_.seq;
  const std::size_t sq = static_cast<std::size_t>(c_.micro_batch) * c_.heads * S * S;
  const int nl = st_.end_layer - st_.first_layer;
  x_.assign(st_.slots, {});
  acts_.assign(st_.slots, std::vector<Acts>(recompute_ ? 1 : nl));
  dtop_.clear();
  ring_.clear();
  if (host_) {
    for (int i = 0; i < std::min(RING, nl); ++i) ring_.push_back(a.alloc<float>(T * h));
    top_ = a.alloc<float>(T * h);
  }
  for (int slot = 0; slot < st_.slots && !host_; ++slot) {
    for (int l = 0; l <= nl; ++l) x_[slot].push_back(a.alloc<float>(T * h));
    if (st_.head && st_.slots > 1) dtop_.push_back(a.alloc<float>(T * h));
  }
  for (auto& per_slot : acts_) for (Acts& x : per_slot) {
    x.ln1 = a.alloc<bf16>(T * h);
    x.ln1_mean = a.alloc<float>(T);
    x.ln1_rstd = a.alloc<float>(T);
    x.q = a.alloc<bf16>(T * h);
    x.k = a.alloc<bf16>(T * h);
    x.v = a.alloc<bf16>(T * h);
    x.p = a.alloc<bf16>(sq);
    x.attn = a.alloc<bf16>(T * h);
    x.x_mid = a.alloc<float>(T * h);
    x.ln2 = a.alloc<bf16>(T * h);
    x.ln2_mean = a.alloc<float>(T);
    x.ln2_rstd = a.alloc<float>(T);
    x.pre = a.alloc<bf16>(T * 4 * h);
    x.act = a.alloc<bf16>(T * 4 * h);
  }
  scratch_ = a.alloc<float>(T * 4 * h);
  scores_ = a.alloc<float>(sq);
  ds_ = a.alloc<bf16>(sq);
  dx_ = a.alloc<float>(T * h);
  da_ = a.alloc<bf16>(T * 4 * h);
  db_ = a.alloc<bf16>(T * 4 * h);
  if (!st_.head) return;
  lnf_ = a.alloc<bf16>(T * h);
  lnf_mean_ = a.alloc<float>(T);
  lnf_rstd_ = a.alloc<float>(T);
  logits_ = a.alloc<float>(T * static_cast<std::size_t>(c_.vocab));
  dlogits_ = a.alloc<bf16>(T * static_cast<std::size_t>(c_.vocab));
}

void GptGpu::layer_forward(int slot, int l, const bf16* pu, Acts& a, bool recomputing, GemmRunner& gemm, cudaStream_t s) {
  const int T = static_cast<int>(c_.tokens()), h = c_.hidden, S = c_.seq, d = c_.head_dim();
  const int bh = c_.micro_batch * c_.heads;
  const HeadShape hs{c_.micro_batch, S, c_.heads, d};
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  layernorm_forward(x(slot, l), w(pu, l, LN1_G), w(pu, l, LN1_B), a.ln1, a.ln1_mean, a.ln1_rstd, T, h, s);
  tick("ln1_fwd", s);
  gemm.run(linear_fwd(a.ln1, w(pu, l, W_QKV), scratch_, T, h, 3 * h), s);
  tick("gemm_qkv_fwd", s);
  split_qkv(scratch_, w(pu, l, B_QKV), a.q, a.k, a.v, hs, s);
  tick("split_qkv", s);
  // scores = scale Q K^T, per (sequence, head) (Vaswani et al. 2017, eq. 1).
  gemm.run(batched(false, true, S, S, d, a.q, d, 1LL * S * d, a.k, d, 1LL * S * d, scores_, S, 1LL * S * S, bh, scale), s);
  tick("gemm_scores_fwd", s);
  causal_softmax_forward(scores_, a.p, 1L * bh * S, S, s);
  tick("softmax_fwd", s);
  gemm.run(batched(false, false, S, d, S, a.p, S, 1LL * S * S, a.v, d, 1LL * S * d, scratch_, d, 1LL * S * d, bh, 1), s);
  tick("gemm_pv_fwd", s);
  merge_heads(scratch_, a.attn, hs, s);
  tick("merge_heads", s);
  gemm.run(linear_fwd(a.attn, w(pu, l, W_O), scratch_, T, h, h), s);
  tick("gemm_proj_fwd", s);
  bias_residual(x(slot, l), scratch_, w(pu, l, B_O), a.x_mid, T, h, s);
  tick("bias_residual", s);
  layernorm_forward(a.x_mid, w(pu, l, LN2_G), w(pu, l, LN2_B), a.ln2, a.ln2_mean, a.ln2_rstd, T, h, s);
  tick("ln2_fwd", s);
  gemm.run(linear_fwd(a.ln2, w(pu, l, W_FC1), scratch_, T, h, 4 * h), s);
  tick("gemm_fc1_fwd", s);
  bias_gelu_forward(scratch_, w(pu, l, B_FC1), a.pre, a.act, T, 4 * h, s);
  tick("bias_gelu_fwd", s);
  if (recomputing) return;  // the layer's output is already stored; backward needs only the saved tensors
  gemm.run(linear_fwd(a.act, w(pu, l, W_FC2), scratch_, T, 4 * h, h), s);
  tick("gemm_fc2_fwd", s);
  bias_residual(a.x_mid, scratch_, w(pu, l, B_FC2), x(slot, l + 1), T, h, s);
  tick("bias_residual", s);
}

void GptGpu::layer_backward(int slot, int l, const bf16* pu, float* gu, Acts& a, GemmRunner& gemm, cudaStream_t s) {
  const int T = static_cast<int>(c_.tokens()), h = c_.hidden, S = c_.seq, d = c_.head_dim();
  const int bh = c_.micro_batch * c_.heads;
  const HeadShape hs{c_.micro_batch, S, c_.heads, d};
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const long th = 1L * T * h;
  // MLP: x_out = x_mid + fc2(gelu(fc1(ln2(x_mid)))); dx_ holds d loss / d x_out.
  column_sum(dx_, g(gu, l, B_FC2), T, h, s);
  tick("column_sum", s);
  to_bf16(dx_, da_, th, s);
  tick("to_bf16", s);
  gemm.run(linear_wgrad(da_, a.act, g(gu, l, W_FC2), T, 4 * h, h), s);
  tick("gemm_fc2_wgrad", s);
  gemm.run(linear_dgrad(da_, w(pu, l, W_FC2), scratch_, T, 4 * h, h), s);
  tick("gemm_fc2_dgrad", s);
  gelu_backward(scratch_, a.pre, db_, 4 * th, s);
  tick("gelu_bwd", s);
  column_sum(db_, g(gu, l, B_FC1), T, 4 * h, s);
  tick("column_sum", s);
  gemm.run(linear_wgrad(db_, a.ln2, g(gu, l, W_FC1), T, h, 4 * h), s);
  tick("gemm_fc1_wgrad", s);
  gemm.run(linear_dgrad(db_, w(pu, l, W_FC1), scratch_, T, h, 4 * h), s);
  tick("gemm_fc1_dgrad", s);
  layernorm_backward_params(scratch_, a.x_mid, a.ln2_mean, a.ln2_rstd, g(gu, l, LN2_G), g(gu, l, LN2_B), T, h, s);
  tick("ln_bwd_params", s);
  layernorm_backward_input(scratch_, a.x_mid, a.ln2_mean, a.ln2_rstd, w(pu, l, LN2_G), dx_, true, T, h, s);
  tick("ln_bwd_input", s);
  // Attention: x_mid = x_in + proj(attn(qkv(ln1(x_in)))).
  column_sum(dx_, g(gu, l, B_O), T, h, s);
  tick("column_sum", s);
  to_bf16(dx_, da_, th, s);
  tick("to_bf16", s);
  gemm.run(linear_wgrad(da_, a.attn, g(gu, l, W_O), T, h, h), s);
  tick("gemm_proj_wgrad", s);
  gemm.run(linear_dgrad(da_, w(pu, l, W_O), scratch_, T, h, h), s);
  tick("gemm_proj_dgrad", s);
  split_heads(scratch_, db_, hs, s);  // dO per head
  tick("split_heads", s);
  // dP = dO V^T; dV = P^T dO; dS = softmax'(dP); dQ = scale dS K; dK = scale dS^T Q.
  gemm.run(batched(false, true, S, S, d, db_, d, 1LL * S * d, a.v, d, 1LL * S * d, scores_, S, 1LL * S * S, bh, 1), s);
  tick("gemm_dp_bwd", s);
  float* dq = scratch_;
  float* dk = scratch_ + th;
  float* dv = scratch_ + 2 * th;
  gemm.run(batched(true, false, S, d, S, a.p, S, 1LL * S * S, db_, d, 1LL * S * d, dv, d, 1LL * S * d, bh, 1), s);
  tick("gemm_dv_bwd", s);
  causal_softmax_backward(a.p, scores_, ds_, 1L * bh * S, S, s);
  tick("softmax_bwd", s);
  gemm.run(batched(false, false, S, d, S, ds_, S, 1LL * S * S, a.k, d, 1LL * S * d, dq, d, 1LL * S * d, bh, scale), s);
  tick("gemm_dq_bwd", s);
  gemm.run(batched(true, false, S, d, S, ds_, S, 1LL * S * S, a.q, d, 1LL * S * d, dk, d, 1LL * S * d, bh, scale), s);
  tick("gemm_dk_bwd", s);
  merge_qkv_grad(dq, dk, dv, da_, hs, s);
  tick("merge_qkv_grad", s);
  column_sum(da_, g(gu, l, B_QKV), T, 3 * h, s);
  tick("column_sum", s);
  gemm.run(linear_wgrad(da_, a.ln1, g(gu, l, W_QKV), T, h, 3 * h), s);
  tick("gemm_qkv_wgrad", s);
  gemm.run(linear_dgrad(da_, w(pu, l, W_QKV), scratch_, T, h, 3 * h), s);
  tick("gemm_qkv_dgrad", s);
  layernorm_backward_params(scratch_, x(slot, l), a.ln1_mean, a.ln1_rstd, g(gu, l, LN1_G), g(gu, l, LN1_B), T, h, s);
  tick("ln_bwd_params", s);
  layernorm_backward_input(scratch_, x(slot, l), a.ln1_mean, a.ln1_rstd, w(pu, l, LN1_G), dx_, true, T, h, s);
  tick("ln_bwd_input", s);
}

void GptGpu::forward_backward(const std::int32_t* tokens, const std::int32_t* targets, float* loss_sum,
                              float grad_scale, float loss_scale, ParamStore& store, GemmRunner& gemm, cudaStream_t s) {
  const int T = static_cast<int>(c_.tokens()), h = c_.hidden, V = c_.vocab, L = c_.layers;
  const int last = L + 1;
  const std::size_t e0 = layout_.units.front().offset, f0 = layout_.units.back().offset;
  store.begin_pass(false);
  const bf16* pe = store.acquire(0);
  const bf16* wte = pe + (layout_.embed(WTE).offset - e0);
  embed_forward(tokens, wte, pe + (layout_.embed(WPE).offset - e0), x(0, 0), T, c_.seq, h, s);
  tick("embedding", s);
  for (int l = 0; l < L; ++l) {
    const bf16* pu = store.acquire(1 + l);
    // Host checkpoints: layer l writes x(l + 1) over the ring buffer of x(l - 2), whose copy out
    // was issued after layer l - 2's forward.
    if (host_ && l + 1 < L && l >= RING - 1) host_->wait_saved(l + 1 - RING, s);
    layer_forward(0, l, pu, acts(0, l), false, gemm, s);
    store.release(1 + l);
    // SAVE_CHECKPOINT after the layer's forward (sim/schedules/data_parallel_schedule.cpp).
    if (host_) host_->save(l, x(0, l), s);
  }
  // LOAD_CHECKPOINT of layer l is issued once the compute `fetch_ahead` = 2 places before its
  // recompute has ended (data_parallel_schedule.cpp, trigger; data_parallel_program.cpp sets
  // fetch_ahead): computes run forward ..., F(L-1), head, then R(L-1), B(L-1), R(L-2), ...; so
  // x(L-1) once F(L-1) has ended, x(L-2) after the head, x(l) after B(l + 2): one layer ahead.
  // Into ring l % 3, which x(l + 3) held last (B(l + 3) has ended by then).
  if (host_) host_->load(L - 1, x(0, L - 1), s);
  const bf16* pf = store.acquire(last);
  const bf16* lnf_g = pf + (layout_.final_ln(LNF_G).offset - f0);
  layernorm_forward(x(0, L), lnf_g, pf + (layout_.final_ln(LNF_B).offset - f0), lnf_, lnf_mean_, lnf_rstd_, T, h, s);
  tick("lnf", s);
  // Tied head: logits = lnf wte^T.
  gemm.run(linear_fwd(lnf_, wte, logits_, T, h, V), s);
  tick("gemm_head_fwd", s);
  cross_entropy(logits_, targets, dlogits_, loss_sum, grad_scale, loss_scale, T, V, s);
  tick("cross_entropy", s);

  store.begin_pass(true);
  float* ge = store.grads(0);
  float* gf = store.grads(last);
  gemm.run(linear_wgrad(dlogits_, lnf_, ge + (layout_.embed(WTE).offset - e0), T, h, V), s);
  tick("gemm_head_wgrad", s);
  gemm.run(linear_dgrad(dlogits_, wte, scratch_, T, h, V), s);
  tick("gemm_head_dgrad", s);
  layernorm_backward_params(scratch_, x(0, L), lnf_mean_, lnf_rstd_, gf + (layout_.final_ln(LNF_G).offset - f0),
                            gf + (layout_.final_ln(LNF_B).offset - f0), T, h, s);
  tick("lnf", s);
  layernorm_backward_input(scratch_, x(0, L), lnf_mean_, lnf_rstd_, lnf_g, dx_, false, T, h, s);
  tick("lnf", s);
  store.grads_done(last);
  if (host_ && L >= 2) host_->load(L - 2, x(0, L - 2), s);
  for (int l = L - 1; l >= 0; --l) {
    const bf16* pu = store.acquire(1 + l);
    if (host_) host_->wait_loaded(l, s);
    if (recompute_) layer_forward(0, l, pu, acts(0, l), true, gemm, s);
    float* gu = store.grads(1 + l);
    layer_backward(0, l, pu, gu, acts(0, l), gemm, s);
    store.release(1 + l);
    store.grads_done(1 + l);
    if (host_ && l >= 2) host_->load(l - 2, x(0, l - 2), s);
  }
  embed_backward(tokens, dx_, ge + (layout_.embed(WTE).offset - e0), ge + (layout_.embed(WPE).offset - e0), T, c_.seq, h,
                 s);
  tick("embedding", s);
  store.grads_done(0);
}

void GptGpu::head(int slot, const std::int32_t* targets, float* loss_sum, float grad_scale, float loss_scale,
                  ParamStore& store, GemmRunner& gemm, cudaStream_t s, float* dx_top) {
  const int T = static_cast<int>(c_.tokens()), h = c_.hidden, V = c_.vocab, L = c_.layers;
  const int last = L + 1;
  const std::size_t e0 = layout_.units.front().offset, f0 = layout_.units.back().offset;
  const bf16* wte = store.acquire(0) + (layout_.embed(WTE).offset - e0);
  const bf16* pf = store.acquire(last);
  const bf16* lnf_g = pf + (layout_.final_ln(LNF_G).offset - f0);
  float* ge = store.grads(0);
  float* gf = store.grads(last);
  layernorm_forward(x(slot, L), lnf_g, pf + (layout_.final_ln(LNF_B).offset - f0), lnf_, lnf_mean_, lnf_rstd_, T, h, s);
  tick("lnf", s);
  gemm.run(linear_fwd(lnf_, wte, logits_, T, h, V), s);
  tick("gemm_head_fwd", s);
  cross_entropy(logits_, targets, dlogits_, loss_sum, grad_scale, loss_scale, T, V, s);
  tick("cross_entropy", s);
  gemm.run(linear_wgrad(dlogits_, lnf_, ge + (layout_.embed(WTE).offset - e0), T, h, V), s);
  tick("gemm_head_wgrad", s);
  gemm.run(linear_dgrad(dlogits_, wte, scratch_, T, h, V), s);
  tick("gemm_head_dgrad", s);
  layernorm_backward_params(scratch_, x(slot, L), lnf_mean_, lnf_rstd_, gf + (layout_.final_ln(LNF_G).offset - f0),
                            gf + (layout_.final_ln(LNF_B).offset - f0), T, h, s);
  tick("lnf", s);
  layernorm_backward_input(scratch_, x(slot, L), lnf_mean_, lnf_rstd_, lnf_g, dx_top, false, T, h, s);
  tick("lnf", s);
}

void GptGpu::stage_forward(int slot, const std::int32_t* tokens, const std::int32_t* targets, float* loss_sum,
                           float grad_scale, float loss_scale, ParamStore& store, GemmRunner& gemm, cudaStream_t s) {
  const int T = static_cast<int>(c_.tokens()), h = c_.hidden;
  if (st_.embed) {
    const std::size_t e0 = layout_.units.front().offset;
    const bf16* pe = store.acquire(0);
    embed_forward(tokens, pe + (layout_.embed(WTE).offset - e0), pe + (layout_.embed(WPE).offset - e0),
                  x(slot, st_.first_layer), T, c_.seq, h, s);
    tick("embedding", s);
  }
  for (int l = st_.first_layer; l < st_.end_layer; ++l) {
    layer_forward(slot, l, store.acquire(1 + l), acts(slot, l), false, gemm, s);
  }
  if (st_.head) head(slot, targets, loss_sum, grad_scale, loss_scale, store, gemm, s, dtop_.empty() ? dx_ : dtop_[slot]);
}

void GptGpu::stage_backward(int slot, const std::int32_t* tokens, ParamStore& store, GemmRunner& gemm, cudaStream_t s) {
  const int T = static_cast<int>(c_.tokens()), h = c_.hidden;
  if (st_.head && !dtop_.empty()) {
    CUDA_CHECK(cudaMemcpyAsync(dx_, dtop_[slot], sizeof(float) * T * h, cudaMemcpyDeviceToDevice, s));
  }
  for (int l = st_.end_layer - 1; l >= st_.first_layer; --l) {
    const bf16* pu = store.acquire(1 + l);
    if (recompute_) layer_forward(slot, l, pu, acts(slot, l), true, gemm, s);
    layer_backward(slot, l, pu, store.grads(1 + l), acts(slot, l), gemm, s);
  }
  if (st_.embed) {
    const std::size_t e0 = layout_.units.front().offset;
    float* ge = store.grads(0);
    embed_backward(tokens, dx_, ge + (layout_.embed(WTE).offset - e0), ge + (layout_.embed(WPE).offset - e0), T, c_.seq,
                   h, s);
    tick("embedding", s);
  }
}

}  // namespace trainsim::calibrate::ref
