#include "ref_kernels.hpp"

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
  bias_residual_k<<<blocks_for(n), BLOCK, 0, s>>>(in, g, bias, out, n, cols);
  CUDA_CHECK_LAUNCH();
}
void bias_gelu_forward(const float* g, const bf16* bias, bf16* pre, bf16* act, int rows, int cols, cudaStream_t s) {
  const long n = static_cast<long>(rows) * cols;
  bias_gelu_k<<<blocks_for(n), BLOCK, 0, s>>>(g, bias, pre, act, n, cols);
  CUDA_CHECK_LAUNCH();
}
void gelu_backward(const float* dact, const bf16* pre, bf16* dpre, long n, cudaStream_t s) {
  gelu_bwd_k<<<blocks_for(n), BLOCK, 0, s>>>(dact, pre, dpre, n);
  CUDA_CHECK_LAUNCH();
}
void to_bf16(const float* in, bf16* out, long n, cudaStream_t s) {
  to_bf16_k<<<blocks_for(n), BLOCK, 0, s>>>(in, out, n);
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
void column_sum(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  const dim3 grid((cols + BLOCK - 1) / BLOCK, (rows + COL_ROWS - 1) / COL_ROWS);
  colsum_k<float><<<grid, BLOCK, 0, s>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}
void column_sum(const bf16* in, float* out, int rows, int cols, cudaStream_t s) {
  const dim3 grid((cols + BLOCK - 1) / BLOCK, (rows + COL_ROWS - 1) / COL_ROWS);
  colsum_k<bf16><<<grid, BLOCK, 0, s>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}
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
