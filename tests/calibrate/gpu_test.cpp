// GPU benchmarks end to end through the built binary (label gpu): every kernel, GEMM, copy and
// collective runs its output check; skipped, saying why, where there is no GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

TEST(CalibrateGpu, QuickGpuBenchmarksPassTheirChecks) {
  test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const auto r = test::run_calibrate("--quick --only gemm,kernels,host_copy,nccl --out " + out, "NCCL_NVLS_ENABLE=0");
  if (r.exit_code == 3) GTEST_SKIP() << "no GPU here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(test::slurp(out + "/summary.json"));
  EXPECT_GT(summary["gemm_bf16_8192_tflops"].get<double>(), 0);
  EXPECT_GT(summary["hbm_copy_GBps"].get<double>(), 0);
  EXPECT_GT(summary["h2d_pinned_GBps"].get<double>(), 0);
}

}  // namespace
}  // namespace trainsim::calibrate
