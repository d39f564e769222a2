// trainsim-calibrate's --out follows the output rules of hwprofiles/io/output_files.hpp: a bad
// --out is a usage error before anything is measured, nothing is written through a planted link
// or into a device, two runs into one --out leave whole files, and an interrupted run leaves
// nothing (not even the directory).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "profile_loader.hpp"
#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

using test::run_calibrate;
using test::slurp;
using test::TempDir;
namespace fs = std::filesystem;

// A raw_results.json as a run writes it, with one CPU-Adam measurement: `rebuild` turns it into
// every output (summary, plot, profile) in milliseconds.
constexpr const char* RAW = R"({"schema_version": 1,
 "provenance": {"kind": "measured", "tool": "trainsim-calibrate 0.1.0", "date": "2026-01-01T00:00:00Z", "host": "test",
                "command_line": "trainsim-calibrate --quick --only cpu_adam --out x", "mode": "quick", "base_profile": null,
                "gpu": {"available": false, "why_not": "no GPU benchmark was asked for", "built_with_cuda": false},
                "host_info": {"hostname": "test", "cpu": "test", "logical_cpus": 2, "physical_cores": 2, "sockets": 1,
                              "memory_GiB": 16, "kernel": "Linux", "os": "Debian", "avx2": true, "avx512": false},
                "notes": [], "options": {"name": "measured", "base": null, "storage_kind": null}},
 "measurements": [{"bench": "cpu_adam", "what": "bf16", "params": {"params": 1048576, "threads": 1},
                   "unit": "params_per_s",
                   "stats": {"median": 2e9, "min": 1.9e9, "max": 2.1e9, "q1": 1.95e9, "q3": 2.05e9, "n": 5},
                   "check": "test fixture"}]})";

const std::set<std::string> OUTPUTS{"raw_results.json", "summary.json", "summary.md", "cpu_adam.svg", "profile.json"};

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string write_raw(const TempDir& dir) {
  const std::string path = dir.str() + "/raw.json";
  std::ofstream(path) << RAW;
  return path;
}

std::string rebuild(const std::string& raw, const std::string& out, const std::string& name = "fixture") {
  return "rebuild " + raw + " --base dgx-h100 --name " + name + " --out " + out;
}

TEST(CalibrateOutput, RebuildWritesEveryOutputAndNoTemporary) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  const auto r = run_calibrate(rebuild(write_raw(dir), out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(listing(out), OUTPUTS);
  EXPECT_EQ(hw::load_profile_file(out + "/profile.json").name, "fixture");
}

TEST(CalibrateOutput, AnOutThatIsNoDirectoryIsAUsageErrorAndNothingIsWritten) {
  TempDir dir;
  const std::string raw = write_raw(dir);
  std::ofstream(dir.path() / "file") << "keep me";
  fs::create_symlink(dir.path() / "nothing", dir.path() / "dangling");
  fs::create_symlink("/dev/null", dir.path() / "link-to-null");
  std::vector<std::pair<std::string, std::string>> cases{
      {dir.str() + "/file", "(a regular file)"},
      {dir.str() + "/file/sub", "/file is a regular file)"},
      {dir.str() + "/dangling", "(a symbolic link to nothing)"},
      {dir.str() + "/link-to-null", "(a character device)"},
  };
  // A device node of the test's own (the null device's numbers), where this user may create one.
  const bool device = ::mknod((dir.str() + "/device").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  if (device) cases.emplace_back(dir.str() + "/device", "(a character device)");
  for (const auto& [out, why] : cases) {
    const auto r = run_calibrate(rebuild(raw, out));
    EXPECT_EQ(r.exit_code, 2) << out << "\n" << r.err;
    EXPECT_NE(r.err.find("--out: expected a directory, or a path where one can be created, got \"" + out + "\""),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(dir.str() + "/file"), "keep me");
  std::set<std::string> expected{"raw.json", "file", "dangling", "link-to-null"};
  if (device) expected.insert("device");
  EXPECT_EQ(listing(dir.path()), expected);
}

TEST(CalibrateOutput, AnOutLinkedToADirectoryIsResolvedOnce) {
  TempDir dir;
  fs::create_directory(dir.path() / "real");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  const auto r = run_calibrate(rebuild(write_raw(dir), dir.str() + "/link"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(listing(dir.path() / "real"), OUTPUTS);
  EXPECT_TRUE(fs::is_symlink(dir.path() / "link"));
}

TEST(CalibrateOutput, ANonRegularFileAtAnOutputNameIsRefusedBeforeMeasuring) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  fs::create_directory(out);
  ASSERT_EQ(::mkfifo((out + "/summary.json").c_str(), 0600), 0);
  // A real run: refused before the benchmark starts (it would print "[cpu_adam]").
  const auto run = run_calibrate("--quick --only cpu_adam --threads 1 --out " + out, "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--out: expected a regular file or the name of a new one, got \"" +
                         fs::canonical(out).string() + "/summary.json\" (a FIFO)"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out.find("[cpu_adam]"), std::string::npos) << "measured before refusing --out:\n" << run.out;
  EXPECT_TRUE(fs::is_fifo(out + "/summary.json"));
  EXPECT_EQ(listing(out), (std::set<std::string>{"summary.json"}));

  // A plot's name (known only once measured) is checked before anything is written.
  const std::string raw = write_raw(dir);
  const std::string out2 = dir.str() + "/out2";
  fs::create_directory(out2);
  fs::create_symlink("/dev/null", out2 + "/cpu_adam.svg");
  const auto r = run_calibrate(rebuild(raw, out2));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cpu_adam.svg\" (a symbolic link to a character device)"), std::string::npos) << r.err;
  EXPECT_EQ(listing(out2), (std::set<std::string>{"cpu_adam.svg"}));
  EXPECT_TRUE(fs::is_symlink(out2 + "/cpu_adam.svg"));
}

TEST(CalibrateOutput, PlantedLinksAreNeverWrittenThrough) {
  TempDir dir, elsewhere;
  const std::string precious = elsewhere.str() + "/precious";
  std::ofstream(precious) << "keep me";
  const std::string out = dir.str() + "/out";
  fs::create_directory(out);
  // A plain writer's fixed temporary name, and a link in place of an output: the first is left alone,
  // the second replaced by the new file; the target of neither is touched.
  fs::create_symlink(precious, out + "/summary.json.tmp-trainsim");
  fs::create_symlink(precious, out + "/summary.md");
  const auto r = run_calibrate(rebuild(write_raw(dir), out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(precious), "keep me");
  EXPECT_FALSE(fs::is_symlink(out + "/summary.md"));
  EXPECT_NE(slurp(out + "/summary.md").find("cpu_adam"), std::string::npos);
  std::set<std::string> expected = OUTPUTS;
  expected.insert("summary.json.tmp-trainsim");
  EXPECT_EQ(listing(out), expected);
}

TEST(CalibrateOutput, ConcurrentRunsIntoOneOutLeaveWholeFiles) {
  TempDir dir, logs;
  const std::string raw = write_raw(dir);
  const std::string out = dir.str() + "/out";
  std::string script = "for i in 1 2 3 4; do (" + std::string(TRAINSIM_CALIBRATE_BINARY) + " " +
                       rebuild(raw, out, "run$i") + " >/dev/null 2>" + logs.str() + "/err$i; echo $? >" + logs.str() +
                       "/rc$i) & done; wait";
  ASSERT_EQ(std::system(script.c_str()), 0);
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(slurp(logs.str() + "/rc" + std::to_string(i)), "0\n") << slurp(logs.str() + "/err" + std::to_string(i));
  }
  EXPECT_EQ(listing(out), OUTPUTS) << "a temporary was left behind";
  const std::string name = hw::load_profile_file(out + "/profile.json").name;
  EXPECT_TRUE(name == "run1" || name == "run2" || name == "run3" || name == "run4") << name;
  EXPECT_TRUE(nlohmann::json::accept(slurp(out + "/summary.json")));
  EXPECT_TRUE(nlohmann::json::accept(slurp(out + "/raw_results.json")));
}

// An interrupted run leaves no result and no temporary: only the record --resume needs
// (parts/run.json) and the parts that had finished (none here).
TEST(CalibrateOutput, SigtermDuringARunLeavesNoResult) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  const std::string log = dir.str() + "/log";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    ::execl(TRAINSIM_CALIBRATE_BINARY, "trainsim-calibrate", "--quick", "--only", "cpu_adam", "--threads", "1", "--out",
            out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the benchmark runs, then interrupt it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (slurp(log).find("] cpu_adam (about") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status << "\n" << slurp(log);
  EXPECT_NE(slurp(log).find("] cpu_adam (about"), std::string::npos) << slurp(log);
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"log", "out"}));
  EXPECT_EQ(listing(out), (std::set<std::string>{"parts"})) << "an interrupted run left a result or a temporary";
  EXPECT_EQ(listing(out + "/parts"), (std::set<std::string>{"framework", "run.json"}));
  EXPECT_TRUE(fs::is_empty(out + "/parts/framework"));
}

}  // namespace
}  // namespace trainsim::calibrate
