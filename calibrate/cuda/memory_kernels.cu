#include <cuda_bf16.h>

#include <cmath>

#include "cuda_check.hpp"
#include "memory_kernels.hpp"

namespace trainsim::calibrate {
namespace {

constexpr float SQRT_2_OVER_PI = 0.7978845608028654f;

// 8 bf16 values moved as one 16-byte load or store.
struct alignas(16) Vec8 {
  __nv_bfloat162 h[4];
};

__device__ void unpack(const Vec8& v, float* out) {
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(v.h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ Vec8 pack(const float* in) {
  Vec8 v;
  for (int i = 0; i < 4; ++i) v.h[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
  return v;
}

template <int THREADS>
__device__ float block_reduce(float v, bool is_max) {
  __shared__ float partial[THREADS / 32];
  __shared__ float result;
  for (int off = 16; off > 0; off /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = partial[0];
    for (int w = 1; w < THREADS / 32; ++w) r = is_max ? fmaxf(r, partial[w]) : r + partial[w];
    result = r;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();  // `result` is reused by the next reduction
  return r;
}

// One block per row; each thread keeps VECS x 8 values in registers, so the row is read once.
template <int THREADS, int VECS>
__global__ void layernorm_kernel(const Vec8* x, const Vec8* gamma, const Vec8* beta, Vec8* y) {
  constexpr int ROW_VECS = THREADS * VECS;
  constexpr float INV_N = 1.0f / (ROW_VECS * 8);
  const std::size_t row = blockIdx.x;
  float v[VECS * 8];
  float sum = 0;
  for (int i = 0; i < VECS; ++i) {
    unpack(x[row * ROW_VECS + i * THREADS + threadIdx.x], v + 8 * i);
    for (int j = 0; j < 8; ++j) sum += v[8 * i + j];
  }
  const float mean = block_reduce<THREADS>(sum, false) * INV_N;
  float sq = 0;
  for (int i = 0; i < VECS * 8; ++i) sq += (v[i] - mean) * (v[i] - mean);
  const float rstd = rsqrtf(block_reduce<THREADS>(sq, false) * INV_N + LN_EPS);
  for (int i = 0; i < VECS; ++i) {
    float g[8], b[8], out[8];
    unpack(gamma[i * THREADS + threadIdx.x], g);
    unpack(beta[i * THREADS + threadIdx.x], b);
    for (int j = 0; j < 8; ++j) out[j] = (v[8 * i + j] - mean) * rstd * g[j] + b[j];
    y[row * ROW_VECS + i * THREADS + threadIdx.x] = pack(out);
  }
}

template <int THREADS, int VECS>
__global__ void softmax_kernel(const Vec8* x, Vec8* y) {
  constexpr int ROW_VECS = THREADS * VECS;
  const std::size_t row = blockIdx.x;
  float v[VECS * 8];
  float mx = -INFINITY;
  for (int i = 0; i < VECS; ++i) {
    unpack(x[row * ROW_VECS + i * THREADS + threadIdx.x], v + 8 * i);
    for (int j = 0; j < 8; ++j) mx = fmaxf(mx, v[8 * i + j]);
  }
  mx = block_reduce<THREADS>(mx, true);
  float sum = 0;
  for (int i = 0; i < VECS * 8; ++i) {
    v[i] = __expf(v[i] - mx);
    sum += v[i];
  }
  const float inv = 1.0f / block_reduce<THREADS>(sum, false);
  for (int i = 0; i < VECS; ++i) {
    float out[8];
    for (int j = 0; j < 8; ++j) out[j] = v[8 * i + j] * inv;
    y[row * ROW_VECS + i * THREADS + threadIdx.x] = pack(out);
  }
}

__global__ void gelu_kernel(const Vec8* x, Vec8* y, std::size_t vecs) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < vecs;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float v[8];
    unpack(x[i], v);
    for (int j = 0; j < 8; ++j) {
      const float u = SQRT_2_OVER_PI * (v[j] + 0.044715f * v[j] * v[j] * v[j]);
      v[j] = 0.5f * v[j] * (1.0f + tanhf(u));
    }
    y[i] = pack(v);
  }
}

constexpr int LN_THREADS = 256, LN_VECS = LN_HIDDEN / (LN_THREADS * 8);
constexpr int SM_THREADS = 128, SM_VECS = SOFTMAX_COLS / (SM_THREADS * 8);
static_assert(LN_VECS * LN_THREADS * 8 == LN_HIDDEN && SM_VECS * SM_THREADS * 8 == SOFTMAX_COLS);

}  // namespace

void launch_layernorm(const void* x, const void* gamma, const void* beta, void* y, std::int64_t rows, cudaStream_t s) {
  layernorm_kernel<LN_THREADS, LN_VECS><<<static_cast<unsigned>(rows), LN_THREADS, 0, s>>>(
      static_cast<const Vec8*>(x), static_cast<const Vec8*>(gamma), static_cast<const Vec8*>(beta), static_cast<Vec8*>(y));
  CUDA_CHECK_LAUNCH();
}

void launch_softmax(const void* x, void* y, std::int64_t rows, cudaStream_t s) {
  softmax_kernel<SM_THREADS, SM_VECS><<<static_cast<unsigned>(rows), SM_THREADS, 0, s>>>(static_cast<const Vec8*>(x),
                                                                                     static_cast<Vec8*>(y));
  CUDA_CHECK_LAUNCH();
}

void launch_gelu(const void* x, void* y, std::size_t count, cudaStream_t s) {
  const std::size_t vecs = count / 8;
  const std::size_t blocks = std::min<std::size_t>((vecs + 255) / 256, 65535);  // grid-stride beyond
  gelu_kernel<<<static_cast<unsigned>(blocks == 0 ? 1 : blocks), 256, 0, s>>>(static_cast<const Vec8*>(x),
                                                                             static_cast<Vec8*>(y), vecs);
  CUDA_CHECK_LAUNCH();
}

double gelu_reference(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

}  // namespace trainsim::calibrate
