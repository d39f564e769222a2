// Activation checkpointing under torch.distributed.pipelining (validation call 43): autocast wraps a
// stage's whole forward, and caches the 16-bit cast of every weight it casts until that forward
// returns. Without checkpointing each layer saves those casts for its backward anyway; with it, the
// cache is their only home, and it is what stage 0's measured peak holds above its checkpoints
// (6.9 GiB for 16 layers of Llama 3 8B). The replay's stage-0 peak must come within 2% of the
// measured one.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "test_support.hpp"
#include "validate_cli_support.hpp"

namespace trainsim::test {
namespace {

using namespace validate_cli;

TEST(ValidateCheckpointing, StageZeroHoldsAutocastsCachedWeightCastsAtTheEndOfItsForward) {
  const std::string run = "reports/validation/measured/call43-h200x2/h200x2_pipe-1f1b_llama_ac_L32-h4096_mb2x8.json";
  const CommandResult r = run_trainsim("validate --measured " + q(source_path(run)) + " --no-trace");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  const std::regex per_gpu(R"(per GPU \(GiB\): predicted ([0-9.]+) / ([0-9.]+) \(one per stage\); measured allocated ([0-9.]+) / ([0-9.]+))");
  ASSERT_TRUE(std::regex_search(r.out, m, per_gpu)) << r.out;
  const double predicted0 = std::stod(m[1]), measured0 = std::stod(m[3]);
  EXPECT_NEAR(predicted0 / measured0, 1.0, 0.02) << "stage 0: predicted " << predicted0 << " GiB, measured " << measured0 << " GiB";
}

}  // namespace
}  // namespace trainsim::test
