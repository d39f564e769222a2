#pragma once
// The reference step's own CUDA kernels (everything that is not a GEMM): embedding, LayerNorm,
// causal softmax, GELU, head split/merge, bias and residual adds, cross-entropy, column sums and
// Adam. Activations that feed a GEMM are bf16; statistics, residuals and gradients are fp32.
// Every launcher checks the launch (CUDA_CHECK_LAUNCH).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace trainsim::calibrate::ref {

using bf16 = __nv_bfloat16;

struct HeadShape {
  int batch, seq, heads, head_dim;
  int hidden() const { return heads * head_dim; }
};

// x[t] = wte[tok[t]] + wpe[t % seq]
void embed_forward(const std::int32_t* tokens, const bf16* wte, const bf16* wpe, float* x, int T, int seq, int h,
                   cudaStream_t s);
// dwte[tok[t]] += dx[t], dwpe[t % seq] += dx[t]
void embed_backward(const std::int32_t* tokens, const float* dx, float* dwte, float* dwpe, int T, int seq, int h,
                    cudaStream_t s);
// out = (x - mean) * rstd * g + b (Ba et al. 2016, eq. 4), eps 1e-5; mean and rstd kept per row.
void layernorm_forward(const float* x, const bf16* g, const bf16* b, bf16* out, float* mean, float* rstd, int rows,
                       int h, cudaStream_t s);
// dx (+)= rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy g; `accumulate` adds to dx.
void layernorm_backward_input(const float* dy, const float* x, const float* mean, const float* rstd, const bf16* g,
                              float* dx, bool accumulate, int rows, int h, cudaStream_t s);
// dg += sum_rows dy xhat, db += sum_rows dy.
void layernorm_backward_params(const float* dy, const float* x, const float* mean, const float* rstd, float* dg,
                               float* db, int rows, int h, cudaStream_t s);
// qkv [T, 3h] (+ bias) -> q, k, v [batch * heads, seq, head_dim].
void split_qkv(const float* qkv, const bf16* bias, bf16* q, bf16* k, bf16* v, HeadShape hs, cudaStream_t s);
// [batch * heads, seq, d] fp32 -> [T, h] bf16.
void merge_heads(const float* in, bf16* out, HeadShape hs, cudaStream_t s);
// [T, h] fp32 -> [batch * heads, seq, d] bf16.
void split_heads(const float* in, bf16* out, HeadShape hs, cudaStream_t s);
// dq, dk, dv [batch * heads, seq, d] fp32 -> dqkv [T, 3h] bf16.
void merge_qkv_grad(const float* dq, const float* dk, const float* dv, bf16* dqkv, HeadShape hs, cudaStream_t s);
// P = softmax over j <= i of the (already scaled) scores; P = 0 above the diagonal.
void causal_softmax_forward(const float* scores, bf16* p, long rows, int seq, cudaStream_t s);
// dS = P (dP - sum_j P dP) (the softmax Jacobian, row by row).
void causal_softmax_backward(const bf16* p, const float* dp, bf16* ds, long rows, int seq, cudaStream_t s);
// out = in + g + bias (bias per column).
void bias_residual(const float* in, const float* g, const bf16* bias, float* out, int rows, int cols, cudaStream_t s);
// pre = bf16(g + bias), act = bf16(gelu(g + bias)).
void bias_gelu_forward(const float* g, const bf16* bias, bf16* pre, bf16* act, int rows, int cols, cudaStream_t s);
// dpre = bf16(dact * gelu'(pre)).
void gelu_backward(const float* dact, const bf16* pre, bf16* dpre, long n, cudaStream_t s);
void to_bf16(const float* in, bf16* out, long n, cudaStream_t s);
// out[c] += sum_r in[r, c]
void column_sum(const float* in, float* out, int rows, int cols, cudaStream_t s);
void column_sum(const bf16* in, float* out, int rows, int cols, cudaStream_t s);
// Per row: loss_sum += (logsumexp - logit[target]) * loss_scale, dlogits = (softmax - onehot) * grad_scale.
void cross_entropy(const float* logits, const std::int32_t* targets, bf16* dlogits, float* loss_sum, float grad_scale, float loss_scale,
                   int rows, int vocab, cudaStream_t s);
// Adam (Kingma and Ba 2015, Algorithm 1) with bias correction; writes the bf16 copy too.
void adam_step(float* master, float* m, float* v, const float* grad, bf16* param, long n, float lr, float beta1,
               float beta2, float eps, int step, cudaStream_t s);
// out[j] = initial_value(tensor_id, first + j, kind) (reference/init_hash.hpp).
void init_params(float* out, long n, std::uint64_t first, std::uint64_t tensor_id, int kind, cudaStream_t s);
// a += b
void add_inplace(float* a, const float* b, long n, cudaStream_t s);

}  // namespace trainsim::calibrate::ref
