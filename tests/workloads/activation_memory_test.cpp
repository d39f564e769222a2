// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"),
// Table 2: activation memory per transformer layer, and Sec. 4.3 for the pipeline. Our memory
// model sums tensor by tensor (activation_memory.cpp); the closed forms below are written as the
// paper prints them, for their model configurations (Table 3: 22B, 175B, 530B, 1T; s = 2048).
#include "activation_memory.hpp"

#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"

namespace trainsim::wl {
namespace {

struct PaperConfig {
  const char* name;
  std::int64_t heads, hidden, layers;
  int t, p;
  std::int64_t b;
};
constexpr PaperConfig CONFIGS[] = {
    {"22B", 64, 6144, 48, 8, 1, 4},
    {"175B", 96, 12288, 96, 8, 8, 1},
    {"530B", 128, 20480, 105, 8, 35, 1},
    {"1T", 160, 25600, 128, 8, 64, 1},
};
constexpr std::int64_t SEQ = 2048;

ModelSpec gpt(const PaperConfig& c) {
  ModelSpec m;
  m.name = c.name;
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.kv_heads = c.heads;
  m.ffn_hidden = 4 * c.hidden;
  m.vocab = 51200;
  m.seq_len = SEQ;
  return m;  // fp16 mixed precision, dropout, materialized attention: the paper's setting
}

double per_layer(const ModelSpec& m, int t, bool sp, Recompute r, std::int64_t b) {
  return layer_activation_bytes(m, {SEQ, b, t, sp, r}).stored;
}

TEST(Korthikanti, Table2FormulasHoldForEveryPaperConfiguration) {
  for (const auto& c : CONFIGS) {
    const ModelSpec m = gpt(c);
    const double s = SEQ, b = static_cast<double>(c.b), h = static_cast<double>(c.hidden),
                 a = static_cast<double>(c.heads), t = c.t;
    const double sbh = s * b * h;
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(per_layer(m, 1, false, Recompute::NONE, c.b), sbh * (34 + 5 * a * s / h));
    EXPECT_DOUBLE_EQ(per_layer(m, c.t, false, Recompute::NONE, c.b), sbh * (10 + 24 / t + 5 * a * s / (h * t)));
    EXPECT_DOUBLE_EQ(per_layer(m, c.t, true, Recompute::NONE, c.b), sbh * (34 / t + 5 * a * s / (h * t)));
    EXPECT_DOUBLE_EQ(per_layer(m, c.t, false, Recompute::SELECTIVE, c.b), sbh * (10 + 24 / t));
    EXPECT_DOUBLE_EQ(per_layer(m, c.t, true, Recompute::SELECTIVE, c.b), sbh * (34 / t));
    EXPECT_DOUBLE_EQ(per_layer(m, c.t, false, Recompute::FULL, c.b), sbh * 2);
  }
}

TEST(Korthikanti, FirstPipelineStageHoldsAllLayersWorthWith1F1B) {
  // Sec. 4.3: the first stage keeps p micro-batches of L/p layers, i.e. L layers' worth, plus the
  // embedding dropout mask (sbhp/t with sequence parallelism).
  for (const auto& c : CONFIGS) {
    if (c.p == 1) continue;
    ModelSpec m = gpt(c);
    Strategy s;
    s.tp = c.t;
    s.pp = c.p;
    s.dp = 1;
    s.gpus = c.t * c.p;
    s.sp = true;
    s.recompute = Recompute::SELECTIVE;
    s.micro_batch = c.b;
    s.global_batch = 2 * c.p * c.b;  // m = 2p micro-batches
    s.seq = SEQ;
    const MemoryEstimate est = estimate_memory(m, s, 8);
    const double sbh = SEQ * static_cast<double>(c.b * c.hidden);
    const double expected = sbh * 34.0 / c.t * c.layers + sbh * c.p / c.t;
    EXPECT_DOUBLE_EQ(est.stages[0].activations.stored_bytes, expected) << c.name;
  }
}

TEST(Korthikanti, InterleavedFirstStageFactor) {
  // Sec. 4.3: interleaving multiplies the first stage's activations by 1 + (p - 1)/(p m), m the
  // number of interleaved stages (our vpp).
  Strategy s;
  s.pp = 8;
  s.vpp = 3;
  s.schedule = Schedule::INTERLEAVED;
  s.dp = 1;
  s.micro_batch = 1;
  s.global_batch = 64;
  EXPECT_DOUBLE_EQ(in_flight_microbatches(s, 0), 8.0 * (1.0 + 7.0 / 24.0));
}

TEST(PipelineInFlight, GpipeKeepsEveryMicroBatchAnd1F1BKeepsPMinusI) {
  Strategy s;
  s.pp = 4;
  s.dp = 1;
  s.micro_batch = 1;
  s.global_batch = 16;
  s.schedule = Schedule::GPIPE;
  for (int stage = 0; stage < 4; ++stage) EXPECT_EQ(in_flight_microbatches(s, stage), 16.0);
  s.schedule = Schedule::ONE_F_ONE_B;
  for (int stage = 0; stage < 4; ++stage) EXPECT_EQ(in_flight_microbatches(s, stage), 4.0 - stage);
  s.global_batch = 2;  // fewer micro-batches than stages
  EXPECT_EQ(in_flight_microbatches(s, 0), 2.0);
}

TEST(ActivationVariants, FlashAttentionDropsTheQuadraticTerms) {
  ModelSpec m = gpt(CONFIGS[1]);
  m.attention = AttentionImpl::FLASH;
  const double s = SEQ, h = 12288, a = 96;
  // Selective-recompute storage plus the fp32 log-sum-exp per head and row (4 a s b bytes).
  EXPECT_DOUBLE_EQ(per_layer(m, 1, false, Recompute::NONE, 1), s * h * 34 + 4 * a * s);
}

TEST(ActivationVariants, Fp32ResidualAndFp32NumericsWidenTheRightTensors) {
  ModelSpec m = gpt(CONFIGS[0]);
  const double base = per_layer(m, 1, false, Recompute::SELECTIVE, 1);
  m.fp32_residual = true;
  // The two norm inputs are the residual stream: 2 x (4 - 2) more bytes per element.
  EXPECT_DOUBLE_EQ(per_layer(m, 1, false, Recompute::SELECTIVE, 1) - base, 4.0 * SEQ * 6144);
  m.fp32_residual = false;
  m.numerics = Numerics::FP32;
  // Every 2-byte tensor doubles; the two 1-byte dropout masks (2 sbh) do not.
  EXPECT_DOUBLE_EQ(per_layer(m, 1, false, Recompute::SELECTIVE, 1), 2 * base - 2.0 * SEQ * 6144);
}

}  // namespace
}  // namespace trainsim::wl
