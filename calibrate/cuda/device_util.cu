#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "device_util.hpp"

namespace trainsim::calibrate {
namespace {

constexpr int THREADS = 256;

int blocks_for(std::size_t n) {
  const std::size_t b = (n + THREADS - 1) / THREADS;
  return static_cast<int>(b < 65536 ? (b == 0 ? 1 : b) : 65536);  // grid-stride loops cover the rest
}

__device__ float hash_uniform(std::uint64_t seed, std::size_t i) {
  std::uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(i) + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64 finalizer
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * (1.0f / 16777216.0f);
}

template <class T>
__global__ void fill_kernel(T* data, std::size_t n, std::uint64_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    data[i] = static_cast<T>(lo + (hi - lo) * hash_uniform(seed, i));
  }
}

template <class T>
__global__ void nonfinite_kernel(const T* data, std::size_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (!isfinite(static_cast<float>(data[i]))) ++local;
  }
  if (local) atomicAdd(count, local);
}

__global__ void fill_pattern_kernel(std::uint64_t* data, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    data[i] = pattern_word(i, seed);
  }
}

__global__ void pattern_check_kernel(const std::uint64_t* data, std::size_t n, std::uint64_t seed,
                                     unsigned long long* count) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (data[i] != pattern_word(i, seed)) ++local;
  }
  if (local) atomicAdd(count, local);
}

// A device counter read back after the kernel: the check's only host synchronization.
class Counter {
 public:
  explicit Counter(cudaStream_t s) : stream_(s) {
    CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), sizeof(unsigned long long), s));
    CUDA_CHECK(cudaMemsetAsync(ptr_, 0, sizeof(unsigned long long), s));
  }
  ~Counter() { cudaFreeAsync(ptr_, stream_); }
  unsigned long long* get() const { return ptr_; }
  std::size_t read() const {
    unsigned long long host = 0;
    CUDA_CHECK(cudaMemcpyAsync(&host, ptr_, sizeof(host), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return static_cast<std::size_t>(host);
  }

 private:
  cudaStream_t stream_;
  unsigned long long* ptr_ = nullptr;
};

}  // namespace

int dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

void fill_uniform(void* data, std::size_t count, DType type, std::uint64_t seed, float lo, float hi, cudaStream_t s) {
  switch (type) {
    case DType::F32: fill_kernel<<<blocks_for(count), THREADS, 0, s>>>(static_cast<float*>(data), count, seed, lo, hi); break;
    case DType::F16: fill_kernel<<<blocks_for(count), THREADS, 0, s>>>(static_cast<__half*>(data), count, seed, lo, hi); break;
    case DType::BF16:
      fill_kernel<<<blocks_for(count), THREADS, 0, s>>>(static_cast<__nv_bfloat16*>(data), count, seed, lo, hi);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void poison(void* data, std::size_t bytes, cudaStream_t s) { CUDA_CHECK(cudaMemsetAsync(data, 0xff, bytes, s)); }

std::size_t count_nonfinite(const void* data, std::size_t count, DType type, cudaStream_t s) {
  Counter c(s);
  switch (type) {
    case DType::F32:
      nonfinite_kernel<<<blocks_for(count), THREADS, 0, s>>>(static_cast<const float*>(data), count, c.get());
      break;
    case DType::F16:
      nonfinite_kernel<<<blocks_for(count), THREADS, 0, s>>>(static_cast<const __half*>(data), count, c.get());
      break;
    case DType::BF16:
      nonfinite_kernel<<<blocks_for(count), THREADS, 0, s>>>(static_cast<const __nv_bfloat16*>(data), count, c.get());
      break;
  }
  CUDA_CHECK_LAUNCH();
  return c.read();
}

void fill_pattern(std::uint64_t* data, std::size_t words, std::uint64_t seed, cudaStream_t s) {
  fill_pattern_kernel<<<blocks_for(words), THREADS, 0, s>>>(data, words, seed);
  CUDA_CHECK_LAUNCH();
}

std::size_t count_pattern_mismatches(const std::uint64_t* data, std::size_t words, std::uint64_t seed, cudaStream_t s) {
  Counter c(s);
  pattern_check_kernel<<<blocks_for(words), THREADS, 0, s>>>(data, words, seed, c.get());
  CUDA_CHECK_LAUNCH();
  return c.read();
}

}  // namespace trainsim::calibrate
