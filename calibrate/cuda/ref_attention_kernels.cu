// The reference's attention-path kernels besides its GEMMs: QKV split into heads, head merges
// and splits, the causal softmax and its backward (declared in ref_kernels.hpp).

#include <stdexcept>

#include "cuda_check.hpp"
#include "ref_block_reduce.cuh"
#include "ref_kernels.hpp"

namespace trainsim::calibrate::ref {
namespace {

using namespace reduce;

// Head layout: token t = b * seq + s; head-major index ((b * heads + hd) * seq + s) * d + e. One
// block per token with 32-bit index math, each thread two adjacent columns (float2 in, bf16x2
// out; head_dim is even, checked by the launchers): the per-element 64-bit divisions of a flat
// index made these copies run at a fraction of HBM bandwidth (op profile, issue 11).
struct TokenPos {
  int b, s;
};
__device__ TokenPos token_pos(int t, int seq) { return {t / seq, t - (t / seq) * seq}; }
__device__ long head_index(const HeadShape& hs, TokenPos p, int hd, int e) {
  return (static_cast<long>(p.b * hs.heads + hd) * hs.seq + p.s) * hs.head_dim + e;
}

__global__ void split_qkv_k(const float* qkv, const bf16* bias, bf16* q, bf16* k, bf16* v, HeadShape hs) {
  const int h = hs.heads * hs.head_dim, t = blockIdx.x;
  const TokenPos p = token_pos(t, hs.seq);
  const float* row = qkv + static_cast<long>(t) * 3 * h;
  for (int col = 2 * threadIdx.x; col < 3 * h; col += 2 * BLOCK) {
    const int which = col / h, c = col - which * h, hd = c / hs.head_dim, e = c - hd * hs.head_dim;
    const float2 x = *reinterpret_cast<const float2*>(row + col);
    bf16* out = which == 0 ? q : which == 1 ? k : v;
    *reinterpret_cast<__nv_bfloat162*>(out + head_index(hs, p, hd, e)) =
        __floats2bfloat162_rn(x.x + __bfloat162float(bias[col]), x.y + __bfloat162float(bias[col + 1]));
  }
}

__global__ void merge_heads_k(const float* in, bf16* out, HeadShape hs) {
  const int h = hs.heads * hs.head_dim, t = blockIdx.x;
  const TokenPos p = token_pos(t, hs.seq);
  for (int col = 2 * threadIdx.x; col < h; col += 2 * BLOCK) {
    const int hd = col / hs.head_dim, e = col - hd * hs.head_dim;
    const float2 x = *reinterpret_cast<const float2*>(in + head_index(hs, p, hd, e));
    *reinterpret_cast<__nv_bfloat162*>(out + static_cast<long>(t) * h + col) = __floats2bfloat162_rn(x.x, x.y);
  }
}

__global__ void split_heads_k(const float* in, bf16* out, HeadShape hs) {
  const int h = hs.heads * hs.head_dim, t = blockIdx.x;
  const TokenPos p = token_pos(t, hs.seq);
  for (int col = 2 * threadIdx.x; col < h; col += 2 * BLOCK) {
    const int hd = col / hs.head_dim, e = col - hd * hs.head_dim;
    const float2 x = *reinterpret_cast<const float2*>(in + static_cast<long>(t) * h + col);
    *reinterpret_cast<__nv_bfloat162*>(out + head_index(hs, p, hd, e)) = __floats2bfloat162_rn(x.x, x.y);
  }
}

__global__ void merge_qkv_grad_k(const float* dq, const float* dk, const float* dv, bf16* dqkv, HeadShape hs) {
  const int h = hs.heads * hs.head_dim, t = blockIdx.x;
  const TokenPos p = token_pos(t, hs.seq);
  for (int col = 2 * threadIdx.x; col < 3 * h; col += 2 * BLOCK) {
    const int which = col / h, c = col - which * h, hd = c / hs.head_dim, e = c - hd * hs.head_dim;
    const float* src = which == 0 ? dq : which == 1 ? dk : dv;
    const float2 x = *reinterpret_cast<const float2*>(src + head_index(hs, p, hd, e));
    *reinterpret_cast<__nv_bfloat162*>(dqkv + static_cast<long>(t) * 3 * h + col) = __floats2bfloat162_rn(x.x, x.y);
  }
}

// Rows up to SOFTMAX_CACHED elements are held in registers (each thread PAIRS pairs of adjacent
// columns): the row is read once instead of three times and written as bf16x2; the causal half
// above the diagonal is not read. Longer or odd rows take the plain loop.
constexpr int SOFTMAX_PAIRS = 4;
constexpr int SOFTMAX_CACHED = 2 * SOFTMAX_PAIRS * BLOCK;

__global__ void softmax_fwd_k(const float* scores, bf16* p, int seq) {
  const long row = blockIdx.x;
  const int i = static_cast<int>(row % seq);  // query position: keys 0..i are visible
  const float* sr = scores + row * seq;
  bf16* pr = p + row * seq;
  if (seq <= SOFTMAX_CACHED && seq % 2 == 0) {
    float v[2 * SOFTMAX_PAIRS];
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < SOFTMAX_PAIRS; ++k) {
      const int j = 2 * (threadIdx.x + k * BLOCK);
      float2 x = make_float2(-INFINITY, -INFINITY);
      if (j + 1 <= i) x = *reinterpret_cast<const float2*>(sr + j);
      else if (j <= i) x.x = sr[j];
      v[2 * k] = x.x;
      v[2 * k + 1] = x.y;
      mx = fmaxf(mx, fmaxf(x.x, x.y));
    }
    mx = block_max(mx);
    float z = 0;
#pragma unroll
    for (int k = 0; k < 2 * SOFTMAX_PAIRS; ++k) {
      const int j = 2 * (threadIdx.x + (k / 2) * BLOCK) + (k % 2);
      v[k] = j <= i ? __expf(v[k] - mx) : 0.0f;
      z += v[k];
    }
    const float inv = 1.0f / block_sum(z);
#pragma unroll
    for (int k = 0; k < SOFTMAX_PAIRS; ++k) {
      const int j = 2 * (threadIdx.x + k * BLOCK);
      if (j < seq) *reinterpret_cast<__nv_bfloat162*>(pr + j) = __floats2bfloat162_rn(v[2 * k] * inv, v[2 * k + 1] * inv);
    }
    return;
  }
  float mx = -INFINITY;
  for (int j = threadIdx.x; j <= i; j += BLOCK) mx = fmaxf(mx, sr[j]);
  mx = block_max(mx);
  float z = 0;
  for (int j = threadIdx.x; j <= i; j += BLOCK) z += __expf(sr[j] - mx);
  const float inv = 1.0f / block_sum(z);
  for (int j = threadIdx.x; j < seq; j += BLOCK) pr[j] = __float2bfloat16(j <= i ? __expf(sr[j] - mx) * inv : 0.0f);
}

__global__ void softmax_bwd_k(const bf16* p, const float* dp, bf16* ds, int seq) {
  const long row = blockIdx.x;
  const int i = static_cast<int>(row % seq);
  const bf16* pr = p + row * seq;
  const float* dr = dp + row * seq;
  bf16* o = ds + row * seq;
  if (seq <= SOFTMAX_CACHED && seq % 2 == 0) {
    float pv[2 * SOFTMAX_PAIRS], dv[2 * SOFTMAX_PAIRS];
    float dot = 0;
#pragma unroll
    for (int k = 0; k < SOFTMAX_PAIRS; ++k) {
      const int j = 2 * (threadIdx.x + k * BLOCK);
      float2 pp = make_float2(0, 0), dd = make_float2(0, 0);
      if (j <= i) {  // P is 0 above the diagonal, so the pair's second element needs no mask
        pp = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(pr + j));
        dd = j + 1 <= i ? *reinterpret_cast<const float2*>(dr + j) : make_float2(dr[j], 0.0f);
      }
      pv[2 * k] = pp.x;
      pv[2 * k + 1] = pp.y;
      dv[2 * k] = dd.x;
      dv[2 * k + 1] = dd.y;
      dot += pp.x * dd.x + pp.y * dd.y;
    }
    dot = block_sum(dot);
#pragma unroll
    for (int k = 0; k < SOFTMAX_PAIRS; ++k) {
      const int j = 2 * (threadIdx.x + k * BLOCK);
      if (j < seq) {
        *reinterpret_cast<__nv_bfloat162*>(o + j) =
            __floats2bfloat162_rn(pv[2 * k] * (dv[2 * k] - dot), pv[2 * k + 1] * (dv[2 * k + 1] - dot));
      }
    }
    return;
  }
  float dot = 0;
  for (int j = threadIdx.x; j <= i; j += BLOCK) dot += __bfloat162float(pr[j]) * dr[j];
  dot = block_sum(dot);
  for (int j = threadIdx.x; j < seq; j += BLOCK) {
    o[j] = __float2bfloat16(j <= i ? __bfloat162float(pr[j]) * (dr[j] - dot) : 0.0f);
  }
}

}  // namespace

static void check_even_head_dim(const HeadShape& hs) {
  if (hs.head_dim % 2 != 0) throw std::invalid_argument("reference kernels: head_dim must be even (bf16x2 copies)");
}
void split_qkv(const float* qkv, const bf16* bias, bf16* q, bf16* k, bf16* v, HeadShape hs, cudaStream_t s) {
  check_even_head_dim(hs);
  split_qkv_k<<<static_cast<unsigned>(hs.batch * hs.seq), BLOCK, 0, s>>>(qkv, bias, q, k, v, hs);
  CUDA_CHECK_LAUNCH();
}
void merge_heads(const float* in, bf16* out, HeadShape hs, cudaStream_t s) {
  check_even_head_dim(hs);
  merge_heads_k<<<static_cast<unsigned>(hs.batch * hs.seq), BLOCK, 0, s>>>(in, out, hs);
  CUDA_CHECK_LAUNCH();
}
void split_heads(const float* in, bf16* out, HeadShape hs, cudaStream_t s) {
  check_even_head_dim(hs);
  split_heads_k<<<static_cast<unsigned>(hs.batch * hs.seq), BLOCK, 0, s>>>(in, out, hs);
  CUDA_CHECK_LAUNCH();
}
void merge_qkv_grad(const float* dq, const float* dk, const float* dv, bf16* dqkv, HeadShape hs, cudaStream_t s) {
  check_even_head_dim(hs);
  merge_qkv_grad_k<<<static_cast<unsigned>(hs.batch * hs.seq), BLOCK, 0, s>>>(dq, dk, dv, dqkv, hs);
  CUDA_CHECK_LAUNCH();
}
void causal_softmax_forward(const float* scores, bf16* p, long rows, int seq, cudaStream_t s) {
  softmax_fwd_k<<<static_cast<unsigned>(rows), BLOCK, 0, s>>>(scores, p, seq);
  CUDA_CHECK_LAUNCH();
}
void causal_softmax_backward(const bf16* p, const float* dp, bf16* ds, long rows, int seq, cudaStream_t s) {
  softmax_bwd_k<<<static_cast<unsigned>(rows), BLOCK, 0, s>>>(p, dp, ds, seq);
  CUDA_CHECK_LAUNCH();
}

}  // namespace trainsim::calibrate::ref
