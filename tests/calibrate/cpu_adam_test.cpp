// CPU-Adam: the vector kernels against the scalar reference (bit for bit), the scalar reference
// against textbook Adam/AdamW in double, and the fp16/bf16 rounding helpers.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "cpu_adam.hpp"
#include "cpu_benchmarks.hpp"
#include "errors.hpp"

namespace trainsim::calibrate {
namespace {

struct State {
  std::vector<float> p, g, m, v;
  std::vector<std::uint16_t> half;
  explicit State(std::size_t n, unsigned seed) : p(n), g(n), m(n), v(n), half(n, 0xffff) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = u(rng);
      g[i] = 1e-2f * u(rng);
      m[i] = 1e-3f * u(rng);
      v[i] = 1e-5f * std::fabs(u(rng));
    }
  }
  AdamTensors tensors() { return {p.data(), g.data(), m.data(), v.data(), half.data(), p.size()}; }
};

std::vector<Isa> vector_isas() {
  std::vector<Isa> isas;
  const Isa best = best_isa();
  if (best == Isa::AVX512) isas = {Isa::AVX2, Isa::AVX512};
  if (best == Isa::AVX2) isas = {Isa::AVX2};
  return isas;
}

TEST(CpuAdam, VectorKernelsEqualScalarReferenceBitForBit) {
  const auto isas = vector_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has neither AVX2+FMA+F16C nor AVX-512: only the scalar kernel exists";
  for (Isa isa : isas) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{15}, std::size_t{17},
                          std::size_t{1000}, std::size_t{4099}}) {
      for (bool adamw : {true, false}) {
        for (HalfType half : {HalfType::BF16, HalfType::FP16}) {
          AdamHyper h;
          h.weight_decay = 0.1f;
          h.adamw = adamw;
          h.step = 3;
          const AdamConstants c = adam_constants(h);
          State ref(n, 11), vec(n, 11);
          adam_update_scalar(c, ref.tensors(), half);
          if (isa == Isa::AVX512) adam_update_avx512(c, vec.tensors(), half);
          if (isa == Isa::AVX2) adam_update_avx2(c, vec.tensors(), half);
          for (std::size_t i = 0; i < n; ++i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(vec.p[i]), std::bit_cast<std::uint32_t>(ref.p[i]))
                << to_string(isa) << " n=" << n << " i=" << i;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(vec.m[i]), std::bit_cast<std::uint32_t>(ref.m[i]));
            ASSERT_EQ(std::bit_cast<std::uint32_t>(vec.v[i]), std::bit_cast<std::uint32_t>(ref.v[i]));
            ASSERT_EQ(vec.half[i], ref.half[i]) << to_string(isa) << " " << to_string(half) << " i=" << i;
          }
        }
      }
    }
  }
}

// Kingma & Ba (2015), Algorithm 1, with decoupled weight decay (Loshchilov & Hutter 2019) or
// L2 regularisation, in double: the scalar kernel is this formula rounded to fp32.
TEST(CpuAdam, ScalarReferenceMatchesTextbookAdamInDouble) {
  for (bool adamw : {true, false}) {
    AdamHyper h;
    h.lr = 1e-3f;
    h.weight_decay = 0.05f;
    h.adamw = adamw;
    h.step = 5;
    State s(2000, 3), orig(2000, 3);
    adam_update_scalar(adam_constants(h), s.tensors(), HalfType::BF16);
    double worst = 0;
    for (std::size_t i = 0; i < s.p.size(); ++i) {
      double g = orig.g[i], p = orig.p[i];
      if (!adamw) g += h.weight_decay * p;
      const double m = h.beta1 * static_cast<double>(orig.m[i]) + (1 - static_cast<double>(h.beta1)) * g;
      const double v = h.beta2 * static_cast<double>(orig.v[i]) + (1 - static_cast<double>(h.beta2)) * g * g;
      const double m_hat = m / (1 - std::pow(static_cast<double>(h.beta1), h.step));
      const double v_hat = v / (1 - std::pow(static_cast<double>(h.beta2), h.step));
      if (adamw) p -= static_cast<double>(h.lr) * h.weight_decay * p;
      // DeepSpeed's CPU-Adam adds eps to sqrt(v)/sqrt(1-beta2^t), i.e. to sqrt(v_hat).
      p -= h.lr * m_hat / (std::sqrt(v_hat) + h.eps);
      worst = std::max(worst, std::fabs(p - s.p[i]) / std::max(std::fabs(p), 1e-2));
    }
    EXPECT_LT(worst, 1e-6) << (adamw ? "AdamW" : "Adam + L2");
  }
}

TEST(CpuAdam, ParallelStepEqualsSingleThreadedReference) {
  for (int threads : {1, 3, 4}) {
    ThreadPool pool(threads);
    AdamHyper h;
    State ref(10007, 5), par(10007, 5);
    adam_update_scalar(adam_constants(h), ref.tensors(), HalfType::FP16);
    adam_step(h, par.tensors(), HalfType::FP16, best_isa(), pool);
    EXPECT_EQ(ref.p, par.p) << threads << " threads";
    EXPECT_EQ(ref.half, par.half) << threads << " threads";
  }
}

TEST(CpuAdam, BenchmarkCheckPassesOnThisCpu) {
  ThreadPool pool(2);
  const std::string check = check_cpu_adam(best_isa(), pool, 100003);
  EXPECT_NE(check.find("max rel diff"), std::string::npos) << check;
}

TEST(HalfRounding, Fp16KnownValues) {
  EXPECT_EQ(float_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16_bits(65519.0f), 0x7bff);               // below the halfway point
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7c00);               // halfway, rounds to even: infinity
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even (zero)
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie to even (2)
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie between 1 and 1+2^-10: even
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(float_to_fp16_bits(std::nanf("")))));
  for (std::uint32_t h = 0; h < 0x7c00; h += 7) {  // every finite half survives the round trip
    EXPECT_EQ(float_to_fp16_bits(fp16_bits_to_float(static_cast<std::uint16_t>(h))), h);
  }
}

TEST(HalfRounding, Bf16KnownValues) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even below
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, even above
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
}

}  // namespace
}  // namespace trainsim::calibrate
