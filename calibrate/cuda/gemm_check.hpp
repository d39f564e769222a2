#pragma once
// The GEMM check: a sample of output elements recomputed in fp64 from the same (already
// rounded) inputs, so the error measured is the GEMM's own (accumulation and output rounding).

#include <cuda_runtime.h>

#include <cstdint>

#include "device_util.hpp"

namespace trainsim::calibrate {

struct GemmOperands {
  const void* a = nullptr;  // row-major, [m,k] or, when trans_a, [k,m]
  const void* b = nullptr;  // row-major, [k,n] or, when trans_b, [n,k]
  const void* c = nullptr;  // row-major [m,n]
  DType type = DType::BF16;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
};

// ||c - ref|| / ||ref|| over `samples` output elements chosen by `seed`. Synchronizes `s`.
double gemm_sampled_rel_error(const GemmOperands& op, int samples, std::uint64_t seed, cudaStream_t s);

}  // namespace trainsim::calibrate
