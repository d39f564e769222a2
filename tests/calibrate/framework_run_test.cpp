// The C++ side of the framework parts with a stand-in driver (stub_driver/: the protocol of
// calibrate/framework/, the raw documents of committed runs, the real merge logic): one run writes
// one profile with the framework sections; rebuild writes it again byte for byte; an interrupted
// run keeps its finished parts and --resume measures only the rest; without PyTorch the run says
// so in one line and writes the profile without those sections.
#include <gtest/gtest.h>

#include <filesystem>

#include "profile_loader.hpp"
#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

using test::run_calibrate;
using test::TempDir;
namespace fs = std::filesystem;

const std::string STUB = std::string("TRAINSIM_CALIBRATE_FRAMEWORK=") + TRAINSIM_TEST_SOURCE_DIR + "/tests/calibrate/stub_driver";

const hw::BandwidthCurve* kernel(const hw::ClusterProfile& p, const std::string& what) {
  for (const auto& c : p.calibration.kernels) {
    if (c.what == what) return &c;
  }
  return nullptr;
}

TEST(FrameworkRun, OneRunWritesOneProfileThatRebuildWritesAgainByteForByte) {
  TempDir dir;
  const std::string out = dir.str() + "/out", again = dir.str() + "/again";
  const auto r = run_calibrate("--quick --only host_memory,framework --base dgx-h200 --name stub-run --out " + out, STUB);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[3/3] torch_fsdp_kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("about"), std::string::npos) << r.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  // The same raw runs were merged into the built-in profiles by the scripts this replaces
  // (merge_torch_calibration.py into h200x2-measured, merge_fsdp_kernels.py into h200x4-measured).
  ASSERT_TRUE(p.calibration.host_dispatch && p.calibration.host_dispatch->op_us);
  EXPECT_EQ(*p.calibration.host_dispatch->op_us, *hw::builtin_profile("h200x2-measured").calibration.host_dispatch->op_us);
  const auto* mine = kernel(p, "torch_foreach_cast_fp32_to_bf16");
  const hw::ClusterProfile h200x4 = hw::builtin_profile("h200x4-measured");
  const auto* builtin = kernel(h200x4, "torch_foreach_cast_fp32_to_bf16");
  ASSERT_TRUE(mine && builtin);
  ASSERT_EQ(mine->points.size(), builtin->points.size());
  for (std::size_t i = 0; i < mine->points.size(); ++i) EXPECT_EQ(mine->points[i].value, builtin->points[i].value) << i;

  const auto rb = run_calibrate("rebuild " + out + "/raw_results.json --out " + again, STUB);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(test::slurp(again + "/profile.json"), test::slurp(out + "/profile.json"));
}

TEST(FrameworkRun, AnInterruptedRunKeepsItsFinishedPartsAndResumeMeasuresTheRest) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  // The driver hangs in its second part; once the first is kept the run is stopped from outside,
  // as `timeout` does.
  const std::string kept = out + "/parts/framework/torch_host.json";
  const std::string cmd = STUB + " STUB_DRIVER_HANG=torch_fsdp_kernels " + TRAINSIM_CALIBRATE_BINARY +
                          " --quick --only host_memory,framework --base dgx-h200 --name stub-run --out " + out +
                          " >/dev/null 2>&1 & p=$!; for i in $(seq 600); do [ -f " + kept +
                          " ] && break; sleep 0.1; done; sleep 0.3; kill -TERM $p; wait $p";
  EXPECT_NE(std::system(("sh -c '" + cmd + "'").c_str()), 0);
  EXPECT_TRUE(fs::exists(out + "/parts/host_memory.json"));
  EXPECT_TRUE(fs::exists(out + "/parts/framework/torch_host.json"));
  EXPECT_FALSE(fs::exists(out + "/parts/framework/torch_fsdp_kernels.json"));
  EXPECT_FALSE(fs::exists(out + "/profile.json"));
  // A new run into it would mix two runs: refused, naming --resume.
  const auto fresh = run_calibrate("--quick --only host_memory --out " + out);
  EXPECT_EQ(fresh.exit_code, 2);
  EXPECT_NE(fresh.err.find("--resume"), std::string::npos) << fresh.err;
  EXPECT_EQ(run_calibrate("--resume " + out + " --quick").exit_code, 2);

  const auto resumed = run_calibrate("--resume " + out, STUB);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("[host_memory] finished in an earlier run: kept"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("[torch_host] finished in an earlier run: kept"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("[torch_fsdp_kernels] done"), std::string::npos) << resumed.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  EXPECT_TRUE(kernel(p, "torch_split_copy_bf16"));
  EXPECT_TRUE(p.calibration.host_dispatch);
}

TEST(FrameworkRun, WithoutPyTorchTheRunSaysSoInOneLineAndWritesTheProfile) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  // The real driver with an interpreter that has no torch with CUDA (Debian's is CPU-only).
  const auto r = run_calibrate("--quick --only host_memory,framework --base dgx-h200 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("framework parts skipped: PyTorch"), std::string::npos) << r.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  EXPECT_TRUE(p.calibration.attention.empty());
  EXPECT_FALSE(p.calibration.host_dispatch);
}

TEST(FrameworkRun, BudgetIsCheckedAndWhatItLeavesOutIsPrinted) {
  TempDir dir;
  const auto low = run_calibrate("--quick --only host_memory --budget 5 --out " + dir.str() + "/a");
  EXPECT_EQ(low.exit_code, 2);
  EXPECT_NE(low.err.find("--budget"), std::string::npos) << low.err;
  const std::string out = dir.str() + "/b";
  const auto r = run_calibrate("--quick --only host_memory,framework --budget 10 --base dgx-h200 --out " + out, STUB);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // host_memory 0.4 s, start 1 + torch_host 2, torch_fsdp_kernels 1 of 1 (quick): all fit in 10 s.
  EXPECT_NE(r.out.find("plan: 3 parts"), std::string::npos) << r.out;
  const auto full = run_calibrate("--full --only host_memory,framework --budget 10 --base dgx-h200 --out " + dir.str() + "/c", STUB);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // host_memory 0.5 (full), start 1 + torch_host 2, torch_fsdp_kernels 2 sizes 2: 5.5 s; 3 sizes (8) would be 11.5.
  EXPECT_NE(full.out.find("torch_fsdp_kernels: 2 of 3 sizes"), std::string::npos) << full.out;
}

}  // namespace
}  // namespace trainsim::calibrate
