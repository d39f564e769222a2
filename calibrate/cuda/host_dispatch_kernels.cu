#include "host_dispatch_kernels.hpp"

namespace trainsim::calibrate {
namespace {

__global__ void empty_kernel() {}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void launch_empty_kernel(cudaStream_t s) { empty_kernel<<<1, 1, 0, s>>>(); }
void launch_spin_kernel(long long cycles, cudaStream_t s) { spin_kernel<<<1, 1, 0, s>>>(cycles); }

}  // namespace trainsim::calibrate
