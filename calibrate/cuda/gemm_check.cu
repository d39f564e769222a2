#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "gemm_check.hpp"

namespace trainsim::calibrate {
namespace {

template <class T>
__device__ double load(const void* p, std::int64_t i) {
  return static_cast<double>(static_cast<float>(static_cast<const T*>(p)[i]));
}

__device__ std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One warp per sampled element: lanes split the k-sum, then reduce by shuffles.
template <class T>
__global__ void reference_kernel(GemmOperands op, int samples, std::uint64_t seed, double* ref, double* got) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= samples) return;
  const std::uint64_t h = mix(seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(warp + 1));
  const std::int64_t bi = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(op.batch));
  const std::int64_t i = static_cast<std::int64_t>((h >> 20) % static_cast<std::uint64_t>(op.m));
  const std::int64_t j = static_cast<std::int64_t>(mix(h) % static_cast<std::uint64_t>(op.n));
  const std::int64_t a0 = bi * op.m * op.k, b0 = bi * op.k * op.n, c0 = bi * op.m * op.n;
  double sum = 0;
  for (std::int64_t l = lane; l < op.k; l += 32) {
    const double a = load<T>(op.a, a0 + (op.trans_a ? l * op.m + i : i * op.k + l));
    const double b = load<T>(op.b, b0 + (op.trans_b ? j * op.k + l : l * op.n + j));
    sum += a * b;
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0) {
    ref[warp] = sum;
    got[warp] = load<T>(op.c, c0 + i * op.n + j);
  }
}

}  // namespace

double gemm_sampled_rel_error(const GemmOperands& op, int samples, std::uint64_t seed, cudaStream_t s) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  DeviceBuffer ref(device, sizeof(double) * static_cast<std::size_t>(samples));
  DeviceBuffer got(device, sizeof(double) * static_cast<std::size_t>(samples));
  const int threads = 256;
  const int blocks = (samples * 32 + threads - 1) / threads;
  switch (op.type) {
    case DType::F32: reference_kernel<float><<<blocks, threads, 0, s>>>(op, samples, seed, ref.as<double>(), got.as<double>()); break;
    case DType::F16: reference_kernel<__half><<<blocks, threads, 0, s>>>(op, samples, seed, ref.as<double>(), got.as<double>()); break;
    case DType::BF16:
      reference_kernel<__nv_bfloat16><<<blocks, threads, 0, s>>>(op, samples, seed, ref.as<double>(), got.as<double>());
      break;
  }
  CUDA_CHECK_LAUNCH();
  std::vector<double> r(static_cast<std::size_t>(samples)), g(static_cast<std::size_t>(samples));
  CUDA_CHECK(cudaMemcpyAsync(r.data(), ref.get(), ref.bytes(), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaMemcpyAsync(g.data(), got.get(), got.bytes(), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  double num = 0, den = 0;
  for (std::size_t x = 0; x < r.size(); ++x) {
    if (!std::isfinite(g[x])) return INFINITY;
    num += (g[x] - r[x]) * (g[x] - r[x]);
    den += r[x] * r[x];
  }
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

}  // namespace trainsim::calibrate
