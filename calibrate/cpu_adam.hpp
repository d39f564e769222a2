#pragma once
// Mixed-precision Adam on the CPU, as ZeRO-Offload runs it (Ren et al., "ZeRO-Offload", USENIX
// ATC 2021, section 5.1; DeepSpeed's CPU-Adam): fp32 master weights, fp32 gradients, fp32 first
// and second moments, and an fp16 or bf16 copy of the updated weights written for the GPU.
// One scalar reference defines the arithmetic; the AVX2 and AVX-512 kernels perform the same
// operations in the same order (same fused multiply-adds, correctly rounded sqrt and division),
// so they agree with it to the last bit.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "thread_pool.hpp"

namespace trainsim::calibrate {

enum class HalfType { FP16, BF16 };
enum class Isa { SCALAR, AVX2, AVX512 };

std::string_view to_string(HalfType t);
std::string_view to_string(Isa isa);

struct AdamHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool adamw = true;  // decoupled weight decay (Loshchilov & Hutter) instead of L2 in the gradient
  int step = 1;       // 1-based step number for the bias corrections
};

// Per-step constants, computed once (in double, then rounded) exactly as every kernel uses them.
struct AdamConstants {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float step_size;          // -lr / (1 - beta1^t)
  float bias_correction2;   // 1 / sqrt(1 - beta2^t)
  float l2_decay;           // weight_decay when !adamw, else 0
  float decoupled_decay;    // -lr * weight_decay when adamw, else 0
};
AdamConstants adam_constants(const AdamHyper& h);

struct AdamTensors {
  float* params = nullptr;           // fp32 master weights, updated in place
  const float* grads = nullptr;      // fp32 gradients
  float* exp_avg = nullptr;          // first moment
  float* exp_avg_sq = nullptr;       // second moment
  std::uint16_t* half_params = nullptr;  // fp16/bf16 copy for the GPU; may be null
  std::size_t count = 0;
};

// Round-to-nearest-even conversions used by every kernel (and by the checks).
std::uint16_t float_to_fp16_bits(float f);
std::uint16_t float_to_bf16_bits(float f);
float fp16_bits_to_float(std::uint16_t h);
float bf16_bits_to_float(std::uint16_t h);

// The reference: one element at a time.
void adam_update_scalar(const AdamConstants& c, AdamTensors t, HalfType half);
// Vector kernels over [0, t.count); the tail that does not fill a vector uses the scalar code.
void adam_update_avx2(const AdamConstants& c, AdamTensors t, HalfType half);
void adam_update_avx512(const AdamConstants& c, AdamTensors t, HalfType half);

// The widest instruction set this CPU and this build support.
Isa best_isa();
// One step over all tensors, split across the pool's threads.
void adam_step(const AdamHyper& h, const AdamTensors& t, HalfType half, Isa isa, ThreadPool& pool);

}  // namespace trainsim::calibrate
