#pragma once
// Our memory-bound kernels, in bf16 as training runs them: layer norm over rows of LN_HIDDEN,
// GELU (tanh form, as Megatron-LM's fused bias-GELU), and a row softmax over SOFTMAX_COLS
// (attention scores). Each reads its input once and writes its output once, so achieved
// bandwidth = (bytes read + bytes written) / time.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim::calibrate {

inline constexpr int LN_HIDDEN = 8192;
inline constexpr int SOFTMAX_COLS = 4096;
inline constexpr float LN_EPS = 1e-5f;

void launch_layernorm(const void* x, const void* gamma, const void* beta, void* y, std::int64_t rows, cudaStream_t s);
void launch_gelu(const void* x, void* y, std::size_t count, cudaStream_t s);
void launch_softmax(const void* x, void* y, std::int64_t rows, cudaStream_t s);

// The same functions in double on the host, for the checks (inputs and outputs as bf16 bits).
double gelu_reference(double x);

}  // namespace trainsim::calibrate
