#pragma once
// Block-wide reductions of the reference's row kernels (ref_kernels.cu, ref_attention_kernels.cu):
// BLOCK threads, every thread gets the result.

#include <cuda_runtime.h>

#include <cmath>

namespace trainsim::calibrate::ref::reduce {

inline constexpr int BLOCK = 256;


// Sum over a block of BLOCK threads; every thread gets the result.
__device__ inline float block_sum(float v) {
  __shared__ float warp_sums[BLOCK / 32];
  __shared__ float total;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float w = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
    if (threadIdx.x == 0) total = w;
  }
  __syncthreads();
  const float r = total;
  __syncthreads();
  return r;
}

__device__ inline float block_max(float v) {
  __shared__ float warp_max[BLOCK / 32];
  __shared__ float total;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float w = threadIdx.x < BLOCK / 32 ? warp_max[threadIdx.x] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) w = fmaxf(w, __shfl_xor_sync(0xffffffffu, w, o));
    if (threadIdx.x == 0) total = w;
  }
  __syncthreads();
  const float r = total;
  __syncthreads();
  return r;
}

}  // namespace trainsim::calibrate::ref::reduce
