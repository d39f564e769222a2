// The built trainsim-calibrate: argument errors exit 2 and write nothing, a GPU request without
// a GPU says so and exits 3, and the CPU parts run and write a profile the loader accepts.
#include <gtest/gtest.h>

#include <filesystem>

#include "profile_loader.hpp"
#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

using test::run_calibrate;
using test::TempDir;
namespace fs = std::filesystem;

TEST(Cli, ArgumentErrorsExit2NameTheFlagAndWriteNothing) {
  TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--out " + out + " --gpus lots", "--gpus"},
      {"--out " + out + " --only gemm,teleport", "--only"},
      {"--out " + out + " --bogus", "--bogus"},
      {"--quick", "--out"},
      {"--out " + out + " --only storage", "--storage-dir"},
      {"--out " + out + " --only cpu --storage-dir " + dir.str() + "/missing", "--storage-dir"},
      {"--out " + out + " --only cpu_adam --base no-such-cluster", "--base"},
  };
  for (const auto& [args, flag] : cases) {
    const auto r = run_calibrate(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
}

TEST(Cli, AskingForGpuBenchmarksWithoutAGpuSaysSoAndExits3) {
  TempDir dir;
  const std::string out = (dir.path() / "out").string();
  // An empty CUDA_VISIBLE_DEVICES hides every GPU, so this holds on GPU machines too.
  const auto r = run_calibrate("--quick --only gemm,cpu_adam --out " + out, "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--only cpu"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, CpuPartsRunWithoutAGpuAndWriteALoadableProfile) {
  TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const auto r = run_calibrate("--quick --only cpu_adam --threads 2 --base dgx-h100 --name cpu-only --out " + out,
                               "CUDA_VISIBLE_DEVICES=");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"raw_results.json", "summary.json", "summary.md", "cpu_adam.svg", "profile.json"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  }
  for (const auto& e : fs::directory_iterator(out)) {
    // Temporaries are hidden files (".<name>.trainsim-XXXXXX"): none may be left.
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();
  }
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  EXPECT_EQ(p.name, "cpu-only");
  ASSERT_TRUE(p.calibration.cpu_adam_params_per_s);
  EXPECT_GT(*p.calibration.cpu_adam_params_per_s, 0);
  const auto summary = nlohmann::json::parse(test::slurp(out + "/summary.json"));
  EXPECT_TRUE(summary["gemm_bf16_8192_tflops"].is_null());
  EXPECT_GT(summary["cpu_adam_params_per_s"].get<double>(), 0);

  // rebuild: the same measurements give the same figures under another profile name.
  const std::string again = (dir.path() / "again").string();
  const auto rb = run_calibrate("rebuild " + out + "/raw_results.json --name cpu-again --out " + again);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  const hw::ClusterProfile q = hw::load_profile_file(again + "/profile.json");
  EXPECT_EQ(q.name, "cpu-again");
  EXPECT_EQ(*q.calibration.cpu_adam_params_per_s, *p.calibration.cpu_adam_params_per_s);
  EXPECT_EQ(run_calibrate("rebuild " + out + "/missing.json --out " + again).exit_code, 2);
}

TEST(Cli, CompareChecksTheTolerance) {
  TempDir dir;
  const std::string a = dir.str() + "/a.json", b = dir.str() + "/b.json", c = dir.str() + "/c.json";
  std::ofstream(a) << R"({"schema_version": 1, "h2d_pinned_GBps": 50.0, "spread": {}})";
  std::ofstream(b) << R"({"schema_version": 1, "h2d_pinned_GBps": 51.0, "spread": {}})";
  std::ofstream(c) << R"({"schema_version": 1, "h2d_pinned_GBps": 60.0, "spread": {}})";
  EXPECT_EQ(run_calibrate("compare " + a + " " + b).exit_code, 0);
  const auto far = run_calibrate("compare " + a + " " + c);
  EXPECT_EQ(far.exit_code, 1);
  EXPECT_NE(far.out.find("**no**"), std::string::npos) << far.out;
  EXPECT_EQ(run_calibrate("compare " + a + " " + dir.str() + "/missing.json").exit_code, 2);
}

}  // namespace
}  // namespace trainsim::calibrate
