// The built trainsim-calibrate: argument errors exit 2 and write nothing, a GPU request without
// a GPU says so and exits 3, and the CPU parts run and write a profile the loader accepts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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

// Issue 43: an input that is not a summary has nothing to compare; "all compared figures agree"
// (exit 0) was a wrong answer. A FIFO is refused, not waited on.
TEST(Cli, CompareRefusesWhatIsNotASummary) {
  TempDir dir;
  const std::string a = dir.str() + "/a.json", x = dir.str() + "/x.json", other = dir.str() + "/other.json";
  std::ofstream(a) << R"({"schema_version": 1, "h2d_pinned_GBps": 50.0, "spread": {}})";
  std::ofstream(x) << "[]";
  std::ofstream(other) << R"({"schema_version": 1, "something_else": "text", "spread": {}})";
  const auto arr = run_calibrate("compare " + a + " " + x);
  EXPECT_EQ(arr.exit_code, 2) << arr.out;
  EXPECT_NE(arr.err.find("a summary.json written by trainsim-calibrate (an object with \"schema_version\": 1"),
            std::string::npos)
      << arr.err;
  EXPECT_NE(arr.err.find(x), std::string::npos) << arr.err;
  EXPECT_EQ(arr.out.find("agree"), std::string::npos) << arr.out;
  const auto none = run_calibrate("compare " + a + " " + other);
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_NE(none.err.find("no figure to compare"), std::string::npos) << none.err;
  // Two figures of 0 agree (0 / 0 was "not within").
  const std::string z1 = dir.str() + "/z1.json", z2 = dir.str() + "/z2.json";
  std::ofstream(z1) << R"({"schema_version": 1, "nvme_read_GBps": 0, "spread": {}})";
  std::ofstream(z2) << R"({"schema_version": 1, "nvme_read_GBps": 0, "spread": {}})";
  EXPECT_EQ(run_calibrate("compare " + z1 + " " + z2).exit_code, 0);
  const std::string fifo = dir.str() + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto f = run_calibrate("compare " + fifo + " " + a);
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("expected a readable regular file"), std::string::npos) << f.err;
}

// Issue 43: a raw_results.json whose numbers are strings was an internal error (exit 1).
TEST(Cli, RebuildRefusesNumbersWrittenAsStrings) {
  TempDir dir;
  const std::string raw = dir.str() + "/raw_results.json";
  std::ofstream(raw) << R"({"schema_version": 1, "provenance": {"host_info": {}, "notes": []}, "measurements": [)"
                        R"({"bench": "cpu_adam", "what": "w", "params": {}, "unit": "params/s", "check": "ok",)"
                        R"( "stats": {"median": "1e9", "min": 1, "max": 1, "q1": 1, "q3": 1, "n": 5}}]})";
  const auto r = run_calibrate("rebuild " + raw + " --out " + dir.str() + "/out");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("measurements[0].stats.median a finite number"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"1e9\""), std::string::npos) << r.err;
}

// A raw file whose figure the profile loader refuses (a 1e308 GB/s mixed read: the loader takes
// 0.001-10000) is bad input to rebuild: exit 2 naming the file and the key, nothing written.
TEST(Cli, RebuildRefusesFiguresTheProfileLoaderRefuses) {
  TempDir dir;
  std::ifstream in(std::string(TRAINSIM_TEST_SOURCE_DIR) + "/reports/calibration/h200x2/storage_mixed/raw/repeat-a/raw_results.json");
  nlohmann::json raw = nlohmann::json::parse(in);
  int changed = 0;
  for (auto& m : raw["measurements"]) {
    if (m["bench"] == "storage_mixed") {
      m["stats"]["median"] = 1e308;
      ++changed;
    }
  }
  ASSERT_GT(changed, 0);
  const std::string path = dir.str() + "/raw_results.json";
  std::ofstream(path) << raw.dump();
  const std::string out = dir.str() + "/out";
  const auto r = run_calibrate("rebuild " + path + " --base dgx-h200 --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("storage.mixed_read_GBps"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace trainsim::calibrate
