// The AVX2 + FMA + F16C kernel of cpu_adam.hpp: 8 parameters per iteration. Compiled with
// -mavx2 -mfma -mf16c and only called when the CPU reports those features (best_isa()).
#include <immintrin.h>

#include "cpu_adam.hpp"

namespace trainsim::calibrate {
namespace {

// float -> bf16 with round-to-nearest-even, quiet NaNs kept: float_to_bf16_bits, 8 at a time.
__m128i to_bf16(__m256 p) {
  const __m256i bits = _mm256_castps_si256(p);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  const __m256i r = _mm256_blendv_epi8(rounded, nan, is_nan);
  // packus works within 128-bit lanes; the permute puts elements 0..3 and 4..7 side by side.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
  return _mm256_castsi256_si128(packed);
}

}  // namespace

void adam_update_avx2(const AdamConstants& c, AdamTensors t, HalfType half) {
  const __m256 beta1 = _mm256_set1_ps(c.beta1), one_minus_beta1 = _mm256_set1_ps(c.one_minus_beta1);
  const __m256 beta2 = _mm256_set1_ps(c.beta2), one_minus_beta2 = _mm256_set1_ps(c.one_minus_beta2);
  const __m256 eps = _mm256_set1_ps(c.eps), step_size = _mm256_set1_ps(c.step_size);
  const __m256 bias_correction2 = _mm256_set1_ps(c.bias_correction2);
  const __m256 l2 = _mm256_set1_ps(c.l2_decay), decoupled = _mm256_set1_ps(c.decoupled_decay);
  std::size_t i = 0;
  for (; i + 8 <= t.count; i += 8) {
    __m256 g = _mm256_loadu_ps(t.grads + i);
    __m256 p = _mm256_loadu_ps(t.params + i);
    if (c.l2_decay != 0.0f) g = _mm256_fmadd_ps(p, l2, g);
    const __m256 m = _mm256_fmadd_ps(g, one_minus_beta1, _mm256_mul_ps(_mm256_loadu_ps(t.exp_avg + i), beta1));
    const __m256 v =
        _mm256_fmadd_ps(_mm256_mul_ps(g, g), one_minus_beta2, _mm256_mul_ps(_mm256_loadu_ps(t.exp_avg_sq + i), beta2));
    const __m256 denom = _mm256_fmadd_ps(_mm256_sqrt_ps(v), bias_correction2, eps);
    const __m256 update = _mm256_div_ps(m, denom);
    if (c.decoupled_decay != 0.0f) p = _mm256_fmadd_ps(p, decoupled, p);
    p = _mm256_fmadd_ps(update, step_size, p);
    _mm256_storeu_ps(t.exp_avg + i, m);
    _mm256_storeu_ps(t.exp_avg_sq + i, v);
    _mm256_storeu_ps(t.params + i, p);
    if (t.half_params != nullptr) {
      const __m128i h = half == HalfType::FP16 ? _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                                               : to_bf16(p);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(t.half_params + i), h);
    }
  }
  if (i < t.count) {
    adam_update_scalar(c,
                       {t.params + i, t.grads + i, t.exp_avg + i, t.exp_avg_sq + i,
                        t.half_params ? t.half_params + i : nullptr, t.count - i},
                       half);
  }
}

}  // namespace trainsim::calibrate
