#pragma once
// The initial value of parameter element i of tensor number `tensor_id` (counted from 1 in layout
// order), computed the same way on the CPU (gpt_layout.cpp) and on the GPU (ref_kernels.cu), in
// double arithmetic so both give the same float. Stateless (SplitMix64 of a key), so a rank can
// fill only its shard.

#include <cstdint>

#ifdef __CUDACC__
#define TRAINSIM_HD __host__ __device__
#else
#define TRAINSIM_HD
#endif

namespace trainsim::calibrate::ref {

enum InitKind : int { INIT_WEIGHT = 0, INIT_VECTOR = 1, INIT_GAIN = 2 };

TRAINSIM_HD inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Weights uniform with standard deviation 0.02 (GPT-2; uniform [-a, a] has sd a / sqrt(3)),
// biases and LayerNorm shifts within 0.02, gains within 0.1 of 1.
TRAINSIM_HD inline float initial_value(std::uint64_t tensor_id, std::uint64_t i, int kind) {
  const double r = static_cast<double>(splitmix64((tensor_id << 40) ^ i) >> 11) * 0x1.0p-52 - 1.0;
  const double weight_scale = 0.034641016151377546;  // 0.02 * sqrt(3)
  return static_cast<float>(kind == INIT_GAIN ? 1.0 + 0.1 * r : kind == INIT_VECTOR ? 0.02 * r : weight_scale * r);
}

}  // namespace trainsim::calibrate::ref
