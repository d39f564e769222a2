// The AVX-512 kernel of cpu_adam.hpp: 16 parameters per iteration. Compiled with -mavx512f
// -mavx512bw -mavx512vl -mfma and only called when the CPU reports those features (best_isa()).
#include <immintrin.h>

#include "cpu_adam.hpp"

namespace trainsim::calibrate {
namespace {

// float -> bf16 with round-to-nearest-even, quiet NaNs kept: float_to_bf16_bits, 16 at a time.
__m256i to_bf16(__m512 p) {
  const __m512i bits = _mm512_castps_si512(p);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i abs = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
  const __m512i nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, nan));
}

}  // namespace

void adam_update_avx512(const AdamConstants& c, AdamTensors t, HalfType half) {
  const __m512 beta1 = _mm512_set1_ps(c.beta1), one_minus_beta1 = _mm512_set1_ps(c.one_minus_beta1);
  const __m512 beta2 = _mm512_set1_ps(c.beta2), one_minus_beta2 = _mm512_set1_ps(c.one_minus_beta2);
  const __m512 eps = _mm512_set1_ps(c.eps), step_size = _mm512_set1_ps(c.step_size);
  const __m512 bias_correction2 = _mm512_set1_ps(c.bias_correction2);
  const __m512 l2 = _mm512_set1_ps(c.l2_decay), decoupled = _mm512_set1_ps(c.decoupled_decay);
  std::size_t i = 0;
  for (; i + 16 <= t.count; i += 16) {
    __m512 g = _mm512_loadu_ps(t.grads + i);
    __m512 p = _mm512_loadu_ps(t.params + i);
    if (c.l2_decay != 0.0f) g = _mm512_fmadd_ps(p, l2, g);
    const __m512 m = _mm512_fmadd_ps(g, one_minus_beta1, _mm512_mul_ps(_mm512_loadu_ps(t.exp_avg + i), beta1));
    const __m512 v =
        _mm512_fmadd_ps(_mm512_mul_ps(g, g), one_minus_beta2, _mm512_mul_ps(_mm512_loadu_ps(t.exp_avg_sq + i), beta2));
    const __m512 denom = _mm512_fmadd_ps(_mm512_sqrt_ps(v), bias_correction2, eps);
    const __m512 update = _mm512_div_ps(m, denom);
    if (c.decoupled_decay != 0.0f) p = _mm512_fmadd_ps(p, decoupled, p);
    p = _mm512_fmadd_ps(update, step_size, p);
    _mm512_storeu_ps(t.exp_avg + i, m);
    _mm512_storeu_ps(t.exp_avg_sq + i, v);
    _mm512_storeu_ps(t.params + i, p);
    if (t.half_params != nullptr) {
      const __m256i h = half == HalfType::FP16 ? _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                                               : to_bf16(p);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t.half_params + i), h);
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
