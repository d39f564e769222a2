#include "cpu_adam.hpp"

#include <bit>
#include <cmath>

namespace trainsim::calibrate {

std::string_view to_string(HalfType t) { return t == HalfType::FP16 ? "fp16" : "bf16"; }

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::AVX512: return "avx512";
    case Isa::AVX2: return "avx2";
    default: return "scalar";
  }
}

AdamConstants adam_constants(const AdamHyper& h) {
  AdamConstants c{};
  c.beta1 = h.beta1;
  c.one_minus_beta1 = 1.0f - h.beta1;
  c.beta2 = h.beta2;
  c.one_minus_beta2 = 1.0f - h.beta2;
  c.eps = h.eps;
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), h.step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), h.step);
  c.step_size = static_cast<float>(-static_cast<double>(h.lr) / bc1);
  c.bias_correction2 = static_cast<float>(1.0 / std::sqrt(bc2));
  c.l2_decay = h.adamw ? 0.0f : h.weight_decay;
  c.decoupled_decay = h.adamw ? -h.lr * h.weight_decay : 0.0f;
  return c;
}

std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_bits_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t float_to_fp16_bits(float f) {
  // IEEE 754 binary32 -> binary16, round to nearest even, overflow to infinity, subnormals kept.
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half of 2^-24: zero
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // so that the result is in units of 2^-24
    const std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    const std::uint32_t rounded = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
  }
  const std::uint32_t rebased = abs - 0x38000000u;  // exponent bias 127 -> 15
  const std::uint32_t q = rebased >> 13;
  const std::uint32_t rem = rebased & 0x1fffu;
  const std::uint32_t rounded = q + ((rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u);
  return static_cast<std::uint16_t>(sign | rounded);
}

float fp16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

void adam_update_scalar(const AdamConstants& c, AdamTensors t, HalfType half) {
  for (std::size_t i = 0; i < t.count; ++i) {
    float g = t.grads[i];
    float p = t.params[i];
    if (c.l2_decay != 0.0f) g = std::fma(p, c.l2_decay, g);
    const float m = std::fma(g, c.one_minus_beta1, t.exp_avg[i] * c.beta1);
    const float v = std::fma(g * g, c.one_minus_beta2, t.exp_avg_sq[i] * c.beta2);
    const float denom = std::fma(std::sqrt(v), c.bias_correction2, c.eps);
    const float update = m / denom;
    if (c.decoupled_decay != 0.0f) p = std::fma(p, c.decoupled_decay, p);
    p = std::fma(update, c.step_size, p);
    t.exp_avg[i] = m;
    t.exp_avg_sq[i] = v;
    t.params[i] = p;
    if (t.half_params != nullptr) {
      t.half_params[i] = half == HalfType::FP16 ? float_to_fp16_bits(p) : float_to_bf16_bits(p);
    }
  }
}

Isa best_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("fma")) {
    return Isa::AVX512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) return Isa::AVX2;
  return Isa::SCALAR;
}

void adam_step(const AdamHyper& h, const AdamTensors& t, HalfType half, Isa isa, ThreadPool& pool) {
  const AdamConstants c = adam_constants(h);
  pool.run([&](int worker) {
    // 64-element chunks keep each thread's slice on whole cache lines of every array.
    const auto [begin, end] = chunk_of(t.count, pool.size(), worker, 64);
    if (begin >= end) return;
    AdamTensors slice{t.params + begin, t.grads + begin, t.exp_avg + begin, t.exp_avg_sq + begin,
                      t.half_params ? t.half_params + begin : nullptr, end - begin};
    switch (isa) {
      case Isa::AVX512: adam_update_avx512(c, slice, half); break;
      case Isa::AVX2: adam_update_avx2(c, slice, half); break;
      default: adam_update_scalar(c, slice, half); break;
    }
  });
}

}  // namespace trainsim::calibrate
