#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "nccl_check.hpp"

namespace trainsim::calibrate {
namespace {

__host__ __device__ float input_value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1));
}

__global__ void fill_kernel(float* data, std::size_t n, int rank) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    data[i] = input_value(rank, i);
  }
}

__global__ void check_kernel(Collective op, const float* out, std::size_t n, std::size_t chunk, int rank, int ranks,
                             unsigned long long* wrong) {
  const float rank_sum = static_cast<float>(ranks * (ranks + 1) / 2);  // sum over r of (r + 1)
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float expect = 0;
    switch (op) {
      case Collective::ALL_REDUCE: expect = rank_sum * static_cast<float>(i % 13 + 1); break;
      case Collective::ALL_GATHER: expect = input_value(static_cast<int>(i / chunk), i % chunk); break;
      case Collective::REDUCE_SCATTER:
        expect = rank_sum * static_cast<float>((static_cast<std::size_t>(rank) * chunk + i) % 13 + 1);
        break;
      case Collective::BROADCAST: expect = input_value(0, i); break;
      case Collective::SEND_RECV: expect = input_value((rank + ranks - 1) % ranks, i); break;
    }
    if (out[i] != expect) ++local;  // also catches the NaN poison of an unwritten element
  }
  if (local) atomicAdd(wrong, local);
}

int blocks_for(std::size_t n) { return static_cast<int>(std::min<std::size_t>((n + 255) / 256 + 1, 65535)); }

}  // namespace

void nccl_fill_input(float* data, std::size_t count, int rank, cudaStream_t s) {
  fill_kernel<<<blocks_for(count), 256, 0, s>>>(data, count, rank);
  CUDA_CHECK_LAUNCH();
}

std::size_t nccl_count_wrong(Collective op, const float* out, std::size_t out_count, std::size_t chunk, int rank,
                             int ranks, cudaStream_t s) {
  unsigned long long* wrong = nullptr;
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&wrong), sizeof(*wrong), s));
  CUDA_CHECK(cudaMemsetAsync(wrong, 0, sizeof(*wrong), s));
  check_kernel<<<blocks_for(out_count), 256, 0, s>>>(op, out, out_count, chunk, rank, ranks, wrong);
  CUDA_CHECK_LAUNCH();
  unsigned long long host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, wrong, sizeof(host), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaFreeAsync(wrong, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return static_cast<std::size_t>(host);
}

}  // namespace trainsim::calibrate
