// ZeRO (Rajbhandari et al. 2020), Table 1: per-device model-state memory in GB (1e9 bytes) for
// 7.5B, 128B and 1T parameters
// at data-parallel degrees 1..1024 and the three ZeRO stages (P_os, P_os+g, P_os+g+p), K = 12.
// Every cell must agree with the memory model to the printed digit.
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "printed_digits.hpp"

namespace trainsim::wl {
namespace {

struct Row {
  int dp;
  const char* cells[9];  // 7.5B: os, os+g, os+g+p; 128B: ...; 1T: ...
};

constexpr Row TABLE_1[] = {
    {1, {"120", "120", "120", "2048", "2048", "2048", "16000", "16000", "16000"}},
    {4, {"52.5", "41.3", "30", "896", "704", "512", "7000", "5500", "4000"}},
    {16, {"35.6", "21.6", "7.5", "608", "368", "128", "4750", "2875", "1000"}},
    {64, {"31.4", "16.6", "1.88", "536", "284", "32", "4187", "2218", "250"}},
    {256, {"30.4", "15.4", "0.47", "518", "263", "8", "4046", "2054", "62.5"}},
    {1024, {"30.1", "15.1", "0.12", "513", "257", "2", "4011", "2013", "15.6"}},
};
constexpr double MODELS[] = {7.5e9, 128e9, 1e12};

double model_states_GB(double params, int dp, int stage) {
  Strategy s;
  s.gpus = dp;
  s.dp = dp;
  s.zero_stage = stage;
  s.global_batch = dp;
  const MemoryEstimate est = estimate_memory(model_from_param_count(params), s, 16);
  return est.stages[0].model_states_bytes() / 1e9;
}

TEST(ZeroTable1, EveryCellAgreesToThePrintedDigit) {
  int cells = 0;
  for (const Row& row : TABLE_1) {
    for (int model = 0; model < 3; ++model) {
      for (int stage = 1; stage <= 3; ++stage) {
        const std::string printed = row.cells[model * 3 + stage - 1];
        const double ours = model_states_GB(MODELS[model], row.dp, stage);
        EXPECT_TRUE(test::agrees_to_printed_digit(ours, printed))
            << MODELS[model] << " params, DP " << row.dp << ", stage " << stage << ": ours " << ours
            << " GB, printed " << printed;
        ++cells;
      }
    }
  }
  EXPECT_EQ(cells, 54);
}

TEST(ZeroTable1, StageFormulasAreExact) {
  // Psi = 7.5e9, N_d = 64 (ZeRO Sec. 5): (2 + 2 + K) Psi, 2 Psi + 2 Psi + K Psi/N_d,
  // 2 Psi + (2 + K) Psi / N_d, (2 + 2 + K) Psi / N_d.
  const double psi = 7.5e9;
  EXPECT_DOUBLE_EQ(model_states_GB(psi, 64, 0) * 1e9, 16 * psi);
  EXPECT_DOUBLE_EQ(model_states_GB(psi, 64, 1) * 1e9, 4 * psi + 12 * psi / 64);
  EXPECT_DOUBLE_EQ(model_states_GB(psi, 64, 2) * 1e9, 2 * psi + 14 * psi / 64);
  EXPECT_DOUBLE_EQ(model_states_GB(psi, 64, 3) * 1e9, 16 * psi / 64);
}

TEST(PrintedDigits, RuleRejectsValuesOffByOneUnitOfTheLastDigit) {
  EXPECT_TRUE(test::agrees_to_printed_digit(4187.5, "4187"));
  EXPECT_TRUE(test::agrees_to_printed_digit(1.875, "1.88"));
  EXPECT_FALSE(test::agrees_to_printed_digit(4189.0, "4187"));
  EXPECT_FALSE(test::agrees_to_printed_digit(1.90, "1.88"));
  EXPECT_FALSE(test::agrees_to_printed_digit(0.131, "0.12"));
  EXPECT_FALSE(test::agrees_to_printed_digit(0.114, "0.12"));
}

}  // namespace
}  // namespace trainsim::wl
