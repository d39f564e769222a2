// Output writing of the built CLI (hwprofiles/io/output_files.hpp, planner/cli/output.cpp): every
// output checked before any is written, whole files or none, nothing written through links or
// into devices, nothing left behind by an error or a signal, and --help that says so. Each test
// below is one way a plain writer (a fixed temporary name, O_TRUNC, rename at the end) goes wrong.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "test_support.hpp"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

// Simulates in a fraction of a second, with a trace of about 1 MB.
const std::string SMALL = "simulate --model gpt2-1.5b --hw dgx2 --gpus 4 --zero 3 --recompute full --micro-batch 1";
// About a second or more of simulation in the child, then a 32 MB trace.
// Seconds of simulation with a trace (the 1T step on 3072 A100s): the interruption tests kill it
// 300 ms in, which must be well inside it (a smaller run, such as the 1T ZeRO-Infinity step on one
// DGX-2, finishes in about that time, and the tests turn flaky).
const std::string LARGE =
    "simulate --model megatron-1t --hw dgx-a100 --gpus 3072 --tp 8 --pp 64 --recompute full --global-batch 3072";

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// A character device node of this test's own (the null device's numbers) inside `dir`: a writer
// that, run as root, replaces a device given as -o with a regular file must not get /dev/null. Empty when this user may not create device nodes.
std::string private_device(const fs::path& dir) {
  const fs::path p = dir / "device";
  if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return "";
  return p.string();
}

test::CommandResult run_in(const fs::path& dir, const std::string& args) {
  return test::run_command("cd '" + dir.string() + "' && " + TRAINSIM_BINARY + " " + args);
}

bool is_trace(const std::string& path) {
  try {
    const auto j = nlohmann::json::parse(test::read_file(path));
    return j.contains("traceEvents") && !j["traceEvents"].empty();
  } catch (const std::exception&) {
    return false;
  }
}

// --- concurrent runs --------------------------------------------------------------------------

TEST(Output, ConcurrentTracesToOneFileLeaveOneCompleteTrace) {
  // With one temporary name ("same.json.tmp-trainsim") for every run, concurrent runs truncate
  // each other's temporary, rename it away under each other and fail or leave a mixture.
  test::ScratchDir dir, logs;
  std::string script = "cd '" + dir.path().string() + "' && for i in 1 2 3 4; do (" + TRAINSIM_BINARY + " " + SMALL +
                       " --trace same.json >/dev/null 2>'" + logs.path().string() + "/err'$i; echo $? >'" +
                       logs.path().string() + "/rc'$i) & done; wait";
  const auto r = test::run_command(script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 1; i <= 4; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(test::read_file((logs.path() / ("rc" + n)).string()), "0\n")
        << "run " << i << ": " << test::read_file((logs.path() / ("err" + n)).string());
  }
  EXPECT_TRUE(is_trace((dir.path() / "same.json").string())) << "not one complete trace";
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"same.json"})) << "a temporary was left behind";
}

// --- nothing is written through a planted link, into a device or over a directory -------------

TEST(Output, APlantedLinkAtTheOldTemporaryNameIsNotFollowed) {
  test::ScratchDir dir, elsewhere;
  const std::string precious = elsewhere.write("precious", "keep me");
  fs::create_symlink(precious, dir.path() / "t.json.tmp-trainsim");
  fs::create_symlink(precious, dir.path() / "r.txt.tmp-trainsim");
  const auto r = run_in(dir.path(), SMALL + " --trace t.json -o r.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(precious), "keep me") << "a planted link was followed and its target overwritten";
  EXPECT_TRUE(is_trace((dir.path() / "t.json").string()));
  EXPECT_NE(test::read_file((dir.path() / "r.txt").string()).find("step time"), std::string::npos);
  EXPECT_EQ(listing(dir.path()),
            (std::set<std::string>{"t.json", "r.txt", "t.json.tmp-trainsim", "r.txt.tmp-trainsim"}));
}

TEST(Output, ATargetThatIsNotARegularFileIsRefusedNamingTheFlag) {
  test::ScratchDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(dir.path() / "subdir");
  fs::create_symlink(fifo, dir.path() / "link-to-fifo");
  fs::create_symlink("/dev/null", dir.path() / "link-to-null");
  const std::string device = private_device(dir.path());
  std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"-o fifo", "-o/--output", "a FIFO"},
      {"-o subdir", "-o/--output", "a directory"},
      {"-o link-to-fifo", "-o/--output", "a symbolic link to a FIFO"},
      {"-o link-to-null", "-o/--output", "a symbolic link to a character device"},
      {"--trace fifo", "--trace", "a FIFO"},
  };
  if (!device.empty()) {
    cases.emplace_back("-o device", "-o/--output", "a character device");
    cases.emplace_back("--trace device", "--trace", "a character device");
  }
  for (const auto& [flags, flag, kind] : cases) {
    for (const std::string& command : {SMALL, std::string("memory --model gpt2-1.5b --hw dgx2")}) {
      if (flag == "--trace" && command != SMALL) continue;
      const auto r = run_in(dir.path(), command + " " + flags);
      EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
      EXPECT_NE(r.err.find(flag + ": expected a regular file"), std::string::npos) << flags << "\n" << r.err;
      EXPECT_NE(r.err.find(kind), std::string::npos) << flags << "\n" << r.err;
      EXPECT_TRUE(r.out.empty()) << flags << ": the result was printed although an output was refused";
    }
  }
  const auto r = run_in(dir.path(), SMALL + " -o fifo");
  EXPECT_NE(r.err.find("leave out -o to write to standard output"), std::string::npos) << r.err;
  if (!device.empty()) {
    EXPECT_TRUE(fs::is_character_file(device)) << "the device was replaced by a regular file";
  }
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced";
  EXPECT_TRUE(fs::is_empty(dir.path() / "subdir"));
  std::set<std::string> expected{"fifo", "subdir", "link-to-fifo", "link-to-null"};
  if (!device.empty()) expected.insert("device");
  EXPECT_EQ(listing(dir.path()), expected);
}

// --- all outputs checked before any is written ---------------------------------------------

TEST(Output, ARefusedOutputStopsTheOthersBeforeTheSimulation) {
  test::ScratchDir dir;
  const auto r = run_in(dir.path(), SMALL + " --trace good.json -o ./nodir/x.txt");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-o/--output: expected a path in an existing directory, got \"./nodir/x.txt\" (no directory ./nodir)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(listing(dir.path()).empty()) << "good.json was written although -o was refused";
}

TEST(Output, ATraceIntoAMissingDirectoryIsMalformedInputNamingTheFlagAndTheDirectory) {
  test::ScratchDir dir;
  const auto r = run_in(dir.path(), SMALL + " --trace nodir/x.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("trainsim: error: --trace: expected a path in an existing directory, got \"nodir/x.json\" "
                       "(no directory nodir)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "the result was printed although --trace was refused";
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(Output, AnExplicitEmptyPathIsRefused) {
  test::ScratchDir dir;
  for (const std::string flags : {"-o ''", "--trace ''"}) {
    const auto r = run_in(dir.path(), SMALL + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
    EXPECT_NE(r.err.find("expected a file path, got an empty path"), std::string::npos) << r.err;
  }
}

TEST(Output, TwoOutputsNamingTheSameFileAreMalformedInput) {
  test::ScratchDir dir;
  const fs::path d = dir.path();
  fs::create_directory(d / "sub");
  const std::string existing = dir.write("existing.json", "old");
  fs::create_symlink(existing, d / "link.json");
  const std::vector<std::pair<std::string, std::string>> pairs{
      {"same.json", "same.json"},
      {"same.json", "./same.json"},
      {"same.json", "sub/../same.json"},
      {"same.json", (d / "same.json").string()},
      {"existing.json", "link.json"},
  };
  for (const auto& [trace, out] : pairs) {
    const auto r = run_in(d, SMALL + " --trace " + trace + " -o " + out);
    EXPECT_EQ(r.exit_code, 2) << trace << " / " << out << "\n" << r.err;
    EXPECT_NE(r.err.find("two outputs with the same path"), std::string::npos) << r.err;
  }
  EXPECT_EQ(listing(d), (std::set<std::string>{"sub", "existing.json", "link.json"}));
  EXPECT_EQ(test::read_file(existing), "old");
}

// --- a configuration that does not fit ------------------------------------------------------

TEST(Output, TraceOnAConfigurationThatDoesNotFitSaysWhyThereIsNone) {
  test::ScratchDir dir;
  const auto r = run_in(dir.path(), "simulate --model megatron-1t --hw dgx2 --gpus 1 --trace t.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Not simulated: does not fit"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("--trace: no trace written to \"t.json\": the configuration does not fit, so it was not "
                       "simulated (GPU memory: "),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(listing(dir.path()).empty());
  // The answer itself still goes where it was asked for.
  const auto j = run_in(dir.path(), "simulate --model megatron-1t --hw dgx2 --gpus 1 --format json -o r.json --trace t.json");
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_FALSE(nlohmann::json::parse(test::read_file((dir.path() / "r.json").string()))["fits"].get<bool>());
  EXPECT_NE(j.err.find("no trace written"), std::string::npos) << j.err;
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"r.json"}));
}

TEST(Output, TraceAndResultAreBothWrittenWhenAllIsWell) {
  test::ScratchDir dir;
  const auto r = run_in(dir.path(), SMALL + " --format json -o r.json --trace t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(test::read_file((dir.path() / "r.json").string()))["fits"].get<bool>());
  EXPECT_TRUE(is_trace((dir.path() / "t.json").string()));
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"r.json", "t.json"}));
}

// --- signals --------------------------------------------------------------------------------

// The processes of process group `pgid`, zombies included (from /proc).
std::vector<pid_t> group_members(pid_t pgid) {
  std::vector<pid_t> members;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    fields >> state >> ppid >> pgrp;
    if (pgrp == pgid) members.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return members;
}

// Starts the built CLI in `dir`, in a process group of its own (so its simulation child can be
// found), with its streams to /dev/null. `no_leak_check`: in a sanitizer build, LeakSanitizer's
// exit-time tracer is a process of the group too, and would pass for a simulation child.
pid_t spawn_in(const fs::path& dir, const std::string& args, bool no_leak_check = false) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (no_leak_check) {
      const char* old = std::getenv("ASAN_OPTIONS");
      const std::string options = (old != nullptr && *old != '\0' ? std::string(old) + ":" : std::string()) + "detect_leaks=0";
      ::setenv("ASAN_OPTIONS", options.c_str(), 1);
    }
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 1);
    ::dup2(null, 2);
    const std::string command = "exec " + std::string(TRAINSIM_BINARY) + " " + args;
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// Runs `args` in `dir`, waits for its simulation child, sends `sig` to the parent alone and
// reports what was left: the parent's wait status, whether every process of the group is gone
// (orphans come to this process, a subreaper, and are reaped here), and the child's status.
struct Interrupted {
  int parent_status = 0;
  bool child_seen = false;
  bool group_gone = false;
  int orphan_status = -1;  // the child's status when it was reaped here rather than by its parent
};

Interrupted interrupt_simulation(const fs::path& dir, const std::string& args, int sig) {
  Interrupted out;
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t pid = spawn_in(dir, args);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!out.child_seen && std::chrono::steady_clock::now() < deadline) {
    out.child_seen = group_members(pid).size() >= 2;
    if (!out.child_seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well into the simulation
  ::kill(pid, sig);
  ::waitpid(pid, &out.parent_status, 0);
  // A simulation child that outlives its parent goes on for seconds, then renames its trace into
  // place: wait long enough for that.
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(-pid, &status, WNOHANG) > 0) out.orphan_status = status;
    if (group_members(pid).empty()) {
      out.group_gone = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return out;
}

TEST(Output, SigtermKillsTheSimulationAndLeavesNothing) {
  test::ScratchDir dir;
  const Interrupted r = interrupt_simulation(dir.path(), LARGE + " --trace big.json -o r.txt", SIGTERM);
  ASSERT_TRUE(r.child_seen) << "the simulation child never started";
  EXPECT_TRUE(WIFSIGNALED(r.parent_status) && WTERMSIG(r.parent_status) == SIGTERM) << r.parent_status;
  EXPECT_TRUE(r.group_gone) << "the simulation child outlived its interrupted parent";
  EXPECT_EQ(r.orphan_status, -1) << "the parent left its child to be reaped by someone else";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(listing(dir.path()).empty()) << "an output or a temporary appeared after SIGTERM";
}

TEST(Output, AKilledParentTakesItsSimulationChildAlong) {
  // SIGKILL cannot be handled: the child dies of PR_SET_PDEATHSIG.
  test::ScratchDir dir;
  const Interrupted r = interrupt_simulation(dir.path(), LARGE + " --trace big.json", SIGKILL);
  ASSERT_TRUE(r.child_seen) << "the simulation child never started";
  EXPECT_TRUE(r.group_gone) << "the simulation child outlived its killed parent";
  EXPECT_TRUE(WIFSIGNALED(r.orphan_status) && WTERMSIG(r.orphan_status) == SIGKILL) << r.orphan_status;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(listing(dir.path()).empty()) << "the orphaned child wrote its trace";
}

TEST(Output, ARefusedPathFailsBeforeTheSimulationStarts) {
  // The path is checked before the simulation, not found unwritable after it.
  test::ScratchDir dir;
  const pid_t pid = spawn_in(dir.path(), LARGE + " --trace nodir/x.json", true);
  bool simulated = false;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (group_members(pid).size() >= 2) simulated = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_FALSE(simulated) << "the simulation ran although --trace was refused";
  EXPECT_TRUE(listing(dir.path()).empty());
}

// --- help -----------------------------------------------------------------------------------

// The example lines of a --help ("  trainsim ..." after "Examples:").
std::vector<std::string> examples(const std::string& help) {
  std::vector<std::string> lines;
  std::istringstream in(help.substr(help.find("Examples:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.rfind("  trainsim ", 0) == 0) lines.push_back(line.substr(2));
  return lines;
}

TEST(Output, EveryCommandsHelpShowsExamplesThatWorkAndTheExitCodes) {
  for (const std::string command : {"memory", "simulate", "list"}) {
    const auto h = test::run_trainsim(command + " --help");
    ASSERT_EQ(h.exit_code, 0) << command;
    ASSERT_NE(h.out.find("Examples:"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("Exit codes:\n  0  an answer, including \"does not fit\"\n  2  malformed input"), std::string::npos)
        << h.out;
    EXPECT_NE(h.out.find("  1  an internal error"), std::string::npos) << h.out;
    const auto lines = examples(h.out);
    EXPECT_GE(lines.size(), 2u) << h.out;
    EXPECT_LE(lines.size(), 3u) << h.out;
    test::ScratchDir dir;
    for (const auto& line : lines) {
      EXPECT_EQ(line.rfind("trainsim " + command, 0), 0u) << line;
      const auto r = run_in(dir.path(), line.substr(std::string("trainsim ").size()));
      EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
    }
  }
}

}  // namespace
}  // namespace trainsim
