#pragma once
// The two kernels of the host-dispatch benchmark, behind plain functions so the benchmark itself
// is host C++.
#include <cuda_runtime.h>

namespace trainsim::calibrate {

void launch_empty_kernel(cudaStream_t s);                  // one block of one thread, no work
void launch_spin_kernel(long long cycles, cudaStream_t s);  // busy for `cycles` SM clock cycles

}  // namespace trainsim::calibrate
