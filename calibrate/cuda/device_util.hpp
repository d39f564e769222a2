#pragma once
// Device-side helpers every GPU benchmark uses to make its checks meaningful: fresh random
// inputs, poisoned outputs, and counting what was left unwritten or came out wrong.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim::calibrate {

enum class DType { F32, F16, BF16 };
int dtype_bytes(DType t);

// Uniform values in [lo, hi) from a counter-based hash of (seed, index): any seed gives a fresh
// input and the same seed reproduces it.
void fill_uniform(void* data, std::size_t count, DType type, std::uint64_t seed, float lo, float hi, cudaStream_t s);

// Poison: all bytes 0xff, a NaN in fp32, fp16 and bf16, so an element the kernel never wrote is
// caught by count_nonfinite.
void poison(void* data, std::size_t bytes, cudaStream_t s);

// Elements that are NaN or infinite. Synchronizes the stream.
std::size_t count_nonfinite(const void* data, std::size_t count, DType type, cudaStream_t s);

// A 64-bit word pattern for copy checks: pattern_word(i, seed) at word i.
void fill_pattern(std::uint64_t* data, std::size_t words, std::uint64_t seed, cudaStream_t s);
std::size_t count_pattern_mismatches(const std::uint64_t* data, std::size_t words, std::uint64_t seed, cudaStream_t s);

#if defined(__CUDACC__)
__host__ __device__
#endif
inline std::uint64_t pattern_word(std::size_t i, std::uint64_t seed) {
  std::uint64_t x = (static_cast<std::uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL ^ seed;
  x ^= x >> 31;
  return x * 0xbf58476d1ce4e5b9ULL;
}

}  // namespace trainsim::calibrate
