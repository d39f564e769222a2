#include "ref_kernels.hpp"

#include <cstdint>

#include "../reference/init_hash.hpp"
#include "cuda_check.hpp"
#include "ref_block_reduce.cuh"

namespace trainsim::calibrate::ref {
namespace {

using namespace reduce;

unsigned blocks_for(long n) { return static_cast<unsigned>((n + BLOCK - 1) / BLOCK); }

__device__ float gelu_f(float x) {
  const float t = tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x));
  return 0.5f * x * (1.0f + t);
}

__device__ float gelu_grad_f(float x) {
  const float t = tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
}

__global__ void embed_fwd_k(const std::int32_t* tok, const bf16* wte, const bf16* wpe, float* x, int T, int seq, int h) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long>(T) * h) return;
  const int t = static_cast<int>(i / h), c = static_cast<int>(i % h);
  x[i] = __bfloat162float(wte[static_cast<long>(tok[t]) * h + c]) + __bfloat162float(wpe[static_cast<long>(t % seq) * h + c]);
}

__global__ void embed_bwd_k(const std::int32_t* tok, const float* dx, float* dwte, float* dwpe, int T, int seq, int h) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long>(T) * h) return;
  const int t = static_cast<int>(i / h), c = static_cast<int>(i % h);
  atomicAdd(&dwte[static_cast<long>(tok[t]) * h + c], dx[i]);
  atomicAdd(&dwpe[static_cast<long>(t % seq) * h + c], dx[i]);
}

__global__ void ln_fwd_k(const float* x, const bf16* g, const bf16* b, bf16* out, float* mean, float* rstd, int h) {
  const float* xr = x + static_cast<long>(blockIdx.x) * h;
  float s = 0;
  for (int i = threadIdx.x; i < h; i += BLOCK) s += xr[i];
  const float m = block_sum(s) / h;
  float v = 0;
  for (int i = threadIdx.x; i < h; i += BLOCK) v += (xr[i] - m) * (xr[i] - m);
  const float rs = rsqrtf(block_sum(v) / h + 1e-5f);
  bf16* o = out + static_cast<long>(blockIdx.x) * h;
  for (int i = threadIdx.x; i < h; i += BLOCK) {
    o[i] = __float2bfloat16((xr[i] - m) * rs * __bfloat162float(g[i]) + __bfloat162float(b[i]));
  }
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = rs;
  }
}

__global__ void ln_bwd_k(const float* dy, const float* x, const float* mean, const float* rstd, const bf16* g, float* dx,
                         bool accumulate, int h) {
  const long row = blockIdx.x;
  const float* dyr = dy + row * h;
  const float* xr = x + row * h;
  const float m = mean[row], rs = rstd[row];
  float a = 0, b = 0;
  for (int i = threadIdx.x; i < h; i += BLOCK) {
    const float dxhat = dyr[i] * __bfloat162float(g[i]);
    a += dxhat;
    b += dxhat * (xr[i] - m) * rs;
  }
  const float mean_dxhat = block_sum(a) / h, mean_dxhat_xhat = block_sum(b) / h;
  float* o = dx + row * h;
  for (int i = threadIdx.x; i < h; i += BLOCK) {
    const float xhat = (xr[i] - m) * rs;
    const float d = rs * (dyr[i] * __bfloat162float(g[i]) - mean_dxhat - xhat * mean_dxhat_xhat);
    o[i] = accumulate ? o[i] + d : d;
  }
}

constexpr int COL_ROWS = 64;  // rows summed by one thread before its single atomic add

__global__ void ln_bwd_params_k(const float* dy, const float* x, const float* mean, const float* rstd, float* dg,
                                float* db, int rows, int h) {
  const int c = blockIdx.x * BLOCK + threadIdx.x;
  if (c >= h) return;
  const int r0 = blockIdx.y * COL_ROWS, r1 = min(rows, r0 + COL_ROWS);
  float sg = 0, sb = 0;
  for (int r = r0; r < r1; ++r) {
    const float d = dy[static_cast<long>(r) * h + c];
    sg += d * (x[static_cast<long>(r) * h + c] - mean[r]) * rstd[r];
    sb += d;
  }
  atomicAdd(&dg[c], sg);
  atomicAdd(&db[c], sb);
}

template <class T>
__device__ float to_f(T v) {
  if constexpr (sizeof(T) == 2) return __bfloat162float(v);
  else return v;
}

template <class T>
__global__ void colsum_k(const T* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * BLOCK + threadIdx.x;
  if (c >= cols) return;
  const int r0 = blockIdx.y * COL_ROWS, r1 = min(rows, r0 + COL_ROWS);
  float s = 0;
  for (int r = r0; r < r1; ++r) s += to_f(in[static_cast<long>(r) * cols + c]);
  atomicAdd(&out[c], s);
}

// The elementwise kernels below move 4 elements per thread (float4 in, 4 x bf16 out as two
// bf16x2) with 32-bit index math: the scalar versions, with a 64-bit modulo per element for the
// bias column, ran at 2.0-2.8 TB/s where the calibrated curves of their class give 3.4-4.1 (the
// single-GPU L24-h1024 op profile on an H200; reports/validation/reference/scripts/op_costs.py
// sets such a profile beside the calibrated curves).
// The launchers take them where n and cols are multiples of 4, n < 2^31 and every pointer is
// 16-byte aligned, else the scalar kernels.
struct Bf16x4 {
  __nv_bfloat162 lo, hi;
};
__device__ Bf16x4 to_bf16x4(float a, float b, float c, float d) {
  return {__floats2bfloat162_rn(a, b), __floats2bfloat162_rn(c, d)};
}
__device__ float4 bias4(const bf16* bias, unsigned c) {
  const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(bias + c));
  const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(bias + c + 2));
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}

// Two adjacent columns per thread (float2 or bf16x2 loads), COL2_ROWS rows of a block summed in
// registers (half of COL_ROWS: as many blocks in flight as the one-column kernel), one atomic add
// per column and block.
constexpr int COL2_ROWS = 32;
template <class T>
__device__ float2 load2(const T* p) {
  if constexpr (sizeof(T) == 2) return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
  else return *reinterpret_cast<const float2*>(p);
}
template <class T>
__global__ void colsum2_k(const T* in, float* out, int rows, int cols) {
  const int c = 2 * (blockIdx.x * BLOCK + threadIdx.x);
  if (c >= cols) return;
  const int r0 = blockIdx.y * COL2_ROWS, r1 = min(rows, r0 + COL2_ROWS);
  float2 s = make_float2(0, 0);
#pragma unroll 8
  for (int r = r0; r < r1; ++r) {
    const float2 v = load2(in + static_cast<long>(r) * cols + c);
    s.x += v.x;
    s.y += v.y;
  }
  atomicAdd(&out[c], s.x);
  atomicAdd(&out[c + 1], s.y);
}

__global__ void bias_residual4_k(const float4* in, const float4* g, const bf16* bias, float4* out, unsigned n4, unsigned cols) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 a = in[i], b = g[i], c = bias4(bias, (4 * i) % cols);
  out[i] = make_float4(a.x + b.x + c.x, a.y + b.y + c.y, a.z + b.z + c.z, a.w + b.w + c.w);
}

__global__ void bias_gelu4_k(const float4* g, const bf16* bias, Bf16x4* pre, Bf16x4* act, unsigned n4, unsigned cols) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 a = g[i], c = bias4(bias, (4 * i) % cols);
  const float4 x = make_float4(a.x + c.x, a.y + c.y, a.z + c.z, a.w + c.w);
  pre[i] = to_bf16x4(x.x, x.y, x.z, x.w);
  act[i] = to_bf16x4(gelu_f(x.x), gelu_f(x.y), gelu_f(x.z), gelu_f(x.w));
}

__global__ void gelu_bwd4_k(const float4* dact, const Bf16x4* pre, Bf16x4* dpre, unsigned n4) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 d = dact[i];
  const Bf16x4 p = pre[i];
  const float2 lo = __bfloat1622float2(p.lo), hi = __bfloat1622float2(p.hi);
  dpre[i] = to_bf16x4(d.x * gelu_grad_f(lo.x), d.y * gelu_grad_f(lo.y), d.z * gelu_grad_f(hi.x), d.w * gelu_grad_f(hi.y));
}

__global__ void to_bf16_4_k(const float4* in, Bf16x4* out, unsigned n4) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 x = in[i];
  out[i] = to_bf16x4(x.x, x.y, x.z, x.w);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
// The bias is read as bf16x2 pairs.
bool aligned4(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; }
// n elements, 4 per thread, with 32-bit indices (n < 2^31).
bool vector4(long n) { return n % 4 == 0 && n < (1L << 31); }

__global__ void bias_residual_k(const float* in, const float* g, const bf16* bias, float* out, long n, int cols) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + g[i] + __bfloat162float(bias[i % cols]);
}

__global__ void bias_gelu_k(const float* g, const bf16* bias, bf16* pre, bf16* act, long n, int cols) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = g[i] + __bfloat162float(bias[i % cols]);
  pre[i] = __float2bfloat16(x);
  act[i] = __float2bfloat16(gelu_f(x));
}

__global__ void gelu_bwd_k(const float* dact, const bf16* pre, bf16* dpre, long n) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) dpre[i] = __float2bfloat16(dact[i] * gelu_grad_f(__bfloat162float(pre[i])));
}

__global__ void to_bf16_k(const float* in, bf16* out, long n) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16(in[i]);
}

__global__ void init_k(float* out, long n, std::uint64_t first, std::uint64_t tensor_id, int kind) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = initial_value(tensor_id, first + static_cast<std::uint64_t>(i), kind);
}

__global__ void add_k(float* a, const float* b, long n) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) a[i] += b[i];
}

__global__ void cross_entropy_k(const float* logits, const std::int32_t* targets, bf16* dlogits, float* loss_sum,
                                float grad_scale, float loss_scale, int vocab) {
  const long row = blockIdx.x;
  const float* lr = logits + row * vocab;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < vocab; j += BLOCK) mx = fmaxf(mx, lr[j]);
  mx = block_max(mx);
  float z = 0;
  for (int j = threadIdx.x; j < vocab; j += BLOCK) z += __expf(lr[j] - mx);
  z = block_sum(z);
  const int target = targets[row];
  const float inv = 1.0f / z;
  bf16* dr = dlogits + row * vocab;
  for (int j = threadIdx.x; j < vocab; j += BLOCK) {
    dr[j] = __float2bfloat16((__expf(lr[j] - mx) * inv - (j == target ? 1.0f : 0.0f)) * grad_scale);
  }
  if (threadIdx.x == 0) atomicAdd(loss_sum, (mx + logf(z) - lr[target]) * loss_scale);
}

__global__ void adam_k(float* master, float* m, float* v, const float* grad, bf16* param, long n, float lr, float b1,
                       float b2, float eps, float c1, float c2) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float g = grad[i];
  const float mi = b1 * m[i] + (1 - b1) * g;
  const float vi = b2 * v[i] + (1 - b2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float w = master[i] - lr * (mi / c1) / (sqrtf(vi / c2) + eps);
  master[i] = w;
  if (param != nullptr) param[i] = __float2bfloat16(w);
}

}  // namespace

void embed_forward(const std::int32_t* tokens, const bf16* wte, const bf16* wpe, float* x, int T, int seq, int h,
                   cudaStream_t s) {
  embed_fwd_k<<<blocks_for(static_cast<long>(T) * h), BLOCK, 0, s>>>(tokens, wte, wpe, x, T, seq, h);
  CUDA_CHECK_LAUNCH();
}
void embed_backward(const std::int32_t* tokens, const float* dx, float* dwte, float* dwpe, int T, int seq, int h,
                    cudaStream_t s) {
  embed_bwd_k<<<blocks_for(static_cast<long>(T) * h), BLOCK, 0, s>>>(tokens, dx, dwte, dwpe, T, seq, h);
  CUDA_CHECK_LAUNCH();
}
void layernorm_forward(const float* x, const bf16* g, const bf16* b, bf16* out, float* mean, float* rstd, int rows,
                       int h, cudaStream_t s) {
  ln_fwd_k<<<rows, BLOCK, 0, s>>>(x, g, b, out, mean, rstd, h);
  CUDA_CHECK_LAUNCH();
}
void layernorm_backward_input(const float* dy, const float* x, const float* mean, const float* rstd, const bf16* g,
                              float* dx, bool accumulate, int rows, int h, cudaStream_t s) {
  ln_bwd_k<<<rows, BLOCK, 0, s>>>(dy, x, mean, rstd, g, dx, accumulate, h);
  CUDA_CHECK_LAUNCH();
}
void layernorm_backward_params(const float* dy, const float* x, const float* mean, const float* rstd, float* dg,
                               float* db, int rows, int h, cudaStream_t s) {
  const dim3 grid((h + BLOCK - 1) / BLOCK, (rows + COL_ROWS - 1) / COL_ROWS);
  ln_bwd_params_k<<<grid, BLOCK, 0, s>>>(dy, x, mean, rstd, dg, db, rows, h);
  CUDA_CHECK_LAUNCH();
}
void bias_residual(const float* in, const float* g, const bf16* bias, float* out, int rows, int cols, cudaStream_t s) {
  const long n = static_cast<long>(rows) * cols;
  if (vector4(n) && cols % 4 == 0 && aligned16(in) && aligned16(g) && aligned16(out) && aligned4(bias)) {
    const unsigned n4 = static_cast<unsigned>(n / 4);
    bias_residual4_k<<<blocks_for(n4), BLOCK, 0, s>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<const float4*>(g), bias,
                                                       reinterpret_cast<float4*>(out), n4, static_cast<unsigned>(cols));
  } else {
    bias_residual_k<<<blocks_for(n), BLOCK, 0, s>>>(in, g, bias, out, n, cols);
  }
  CUDA_CHECK_LAUNCH();
}
void bias_gelu_forward(const float* g, const bf16* bias, bf16* pre, bf16* act, int rows, int cols, cudaStream_t s) {
  const long n = static_cast<long>(rows) * cols;
  if (vector4(n) && cols % 4 == 0 && aligned16(g) && aligned16(pre) && aligned16(act) && aligned4(bias)) {
    const unsigned n4 = static_cast<unsigned>(n / 4);
    bias_gelu4_k<<<blocks_for(n4), BLOCK, 0, s>>>(reinterpret_cast<const float4*>(g), bias, reinterpret_cast<Bf16x4*>(pre),
                                                   reinterpret_cast<Bf16x4*>(act), n4, static_cast<unsigned>(cols));
  } else {
    bias_gelu_k<<<blocks_for(n), BLOCK, 0, s>>>(g, bias, pre, act, n, cols);
  }
  CUDA_CHECK_LAUNCH();
}
void gelu_backward(const float* dact, const bf16* pre, bf16* dpre, long n, cudaStream_t s) {
  if (vector4(n) && aligned16(dact) && aligned16(pre) && aligned16(dpre)) {
    const unsigned n4 = static_cast<unsigned>(n / 4);
    gelu_bwd4_k<<<blocks_for(n4), BLOCK, 0, s>>>(reinterpret_cast<const float4*>(dact), reinterpret_cast<const Bf16x4*>(pre),
                                                  reinterpret_cast<Bf16x4*>(dpre), n4);
  } else {
    gelu_bwd_k<<<blocks_for(n), BLOCK, 0, s>>>(dact, pre, dpre, n);
  }
  CUDA_CHECK_LAUNCH();
}
void to_bf16(const float* in, bf16* out, long n, cudaStream_t s) {
  if (vector4(n) && aligned16(in) && aligned16(out)) {
    const unsigned n4 = static_cast<unsigned>(n / 4);
    to_bf16_4_k<<<blocks_for(n4), BLOCK, 0, s>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<Bf16x4*>(out), n4);
  } else {
    to_bf16_k<<<blocks_for(n), BLOCK, 0, s>>>(in, out, n);
  }
  CUDA_CHECK_LAUNCH();
}
void init_params(float* out, long n, std::uint64_t first, std::uint64_t tensor_id, int kind, cudaStream_t s) {
  init_k<<<blocks_for(n), BLOCK, 0, s>>>(out, n, first, tensor_id, kind);
  CUDA_CHECK_LAUNCH();
}
void add_inplace(float* a, const float* b, long n, cudaStream_t s) {
  add_k<<<blocks_for(n), BLOCK, 0, s>>>(a, b, n);
  CUDA_CHECK_LAUNCH();
}
namespace {
template <class T>
void column_sum_any(const T* in, float* out, int rows, int cols, cudaStream_t s) {
  if (cols % 2 == 0 && reinterpret_cast<std::uintptr_t>(in) % (2 * sizeof(T)) == 0) {
    const dim3 grid((cols / 2 + BLOCK - 1) / BLOCK, (rows + COL2_ROWS - 1) / COL2_ROWS);
    colsum2_k<T><<<grid, BLOCK, 0, s>>>(in, out, rows, cols);
  } else {
    const dim3 grid((cols + BLOCK - 1) / BLOCK, (rows + COL_ROWS - 1) / COL_ROWS);
    colsum_k<T><<<grid, BLOCK, 0, s>>>(in, out, rows, cols);
  }
  CUDA_CHECK_LAUNCH();
}
}  // namespace
void column_sum(const float* in, float* out, int rows, int cols, cudaStream_t s) { column_sum_any(in, out, rows, cols, s); }
void column_sum(const bf16* in, float* out, int rows, int cols, cudaStream_t s) { column_sum_any(in, out, rows, cols, s); }
void cross_entropy(const float* logits, const std::int32_t* targets, bf16* dlogits, float* loss_sum, float grad_scale, float loss_scale,
                   int rows, int vocab, cudaStream_t s) {
  cross_entropy_k<<<rows, BLOCK, 0, s>>>(logits, targets, dlogits, loss_sum, grad_scale, loss_scale, vocab);
  CUDA_CHECK_LAUNCH();
}
void adam_step(float* master, float* m, float* v, const float* grad, bf16* param, long n, float lr, float beta1,
               float beta2, float eps, int step, cudaStream_t s) {
  const float c1 = 1.0f - powf(beta1, static_cast<float>(step));
  const float c2 = 1.0f - powf(beta2, static_cast<float>(step));
  adam_k<<<blocks_for(n), BLOCK, 0, s>>>(master, m, v, grad, param, n, lr, beta1, beta2, eps, c1, c2);
  CUDA_CHECK_LAUNCH();
}

}  // namespace trainsim::calibrate::ref
