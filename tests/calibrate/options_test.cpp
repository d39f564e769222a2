// Command-line parsing: every mistake is a UsageError naming the flag.
#include <gtest/gtest.h>

#include "errors.hpp"
#include "options.hpp"

namespace trainsim::calibrate {
namespace {

std::string usage_error(const std::vector<std::string>& args) {
  try {
    parse_command_line(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Options, DefaultsToAFullRunOfEverythingExceptStorageWithoutADirectory) {
  const auto cmd = parse_command_line({"--out", "o"});
  EXPECT_EQ(cmd.options.mode, Mode::FULL);
  EXPECT_TRUE(cmd.options.parts.contains(Part::GEMM));
  EXPECT_TRUE(cmd.options.parts.contains(Part::CPU_ADAM));
  EXPECT_FALSE(cmd.options.parts.contains(Part::STORAGE));
  EXPECT_EQ(cmd.options.skipped_notes.size(), 1u);
}

TEST(Options, OnlyCpuNeedsNoGpu) {
  const auto cmd = parse_command_line({"--quick", "--only", "cpu", "--storage-dir", "/tmp", "--out", "o"});
  EXPECT_EQ(cmd.options.mode, Mode::QUICK);
  EXPECT_FALSE(any_gpu_part(cmd.options.parts));
  EXPECT_TRUE(cmd.options.parts.contains(Part::STORAGE));
}

TEST(Options, ErrorsNameTheFlagAndWhatWasExpected) {
  EXPECT_NE(usage_error({"--out", "o", "--gpus", "two"}).find("--gpus: expected an integer"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--gpus", "0"}).find("--gpus"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--only", "gemm,warp"}).find("--only"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--frobnicate"}).find("--frobnicate: expected no such flag"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--onlyy", "cpu"}).find("--onlyy: expected no such flag (see --help) (did you mean \"--only\"?)"),
            std::string::npos);
  EXPECT_NE(usage_error({"--quick"}).find("--out"), std::string::npos);
  EXPECT_NE(usage_error({"--out"}).find("--out: expected a value"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--quick", "--full"}).find("--quick"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--only", "storage"}).find("--storage-dir"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--name", "Bad Name"}).find("--name"), std::string::npos);
  EXPECT_NE(usage_error({"--out", "o", "--storage-dir", "d", "--storage-kind", "floppy"}).find("--storage-kind"),
            std::string::npos);
  EXPECT_NE(usage_error({"compare", "a.json"}).find("two summary.json files"), std::string::npos);
  EXPECT_NE(usage_error({"compare", "a", "b", "--tolerance", "2"}).find("--tolerance"), std::string::npos);
}

TEST(Options, StorageBenchFileSizesAreOptionalAndStrict) {
  const auto plain = parse_command_line({"--quick", "--only", "storage", "--storage-dir", "d", "--out", "o"});
  EXPECT_EQ(plain.options.storage_file_mib, 0);  // 0: the benches' own defaults
  EXPECT_EQ(plain.options.storage_mixed_file_mib, 0);
  const auto sized = parse_command_line({"--quick", "--only", "storage", "--storage-dir", "d", "--out", "o",
                                         "--storage-file-mib", "16384", "--storage-mixed-file-mib", "64"});
  EXPECT_EQ(sized.options.storage_file_mib, 16384);
  EXPECT_EQ(sized.options.storage_mixed_file_mib, 64);
  const std::vector<std::string> base{"--only", "storage", "--storage-dir", "d", "--out", "o"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return usage_error(extra);
  };
  for (const char* flag : {"--storage-file-mib", "--storage-mixed-file-mib"}) {
    const std::string f(flag);
    EXPECT_NE(with({f, "63"}).find(f + ": expected an integer from 64 to 1048576"), std::string::npos) << f;
    EXPECT_NE(with({f, "1048577"}).find(f + ": expected an integer"), std::string::npos) << f;
    EXPECT_NE(with({f, "16G"}).find(f + ": expected an integer"), std::string::npos) << f;
    EXPECT_NE(with({f, "-5"}).find(f), std::string::npos) << f;
    EXPECT_NE(with({f, "1e4"}).find(f), std::string::npos) << f;
    EXPECT_NE(with({f}).find(f + ": expected a value"), std::string::npos) << f;
    // Meaningless without the storage part: an error, not silently ignored.
    EXPECT_NE(usage_error({"--out", "o", f, "1024"}).find(f + ": expected the storage part"), std::string::npos) << f;
    EXPECT_NE(usage_error({"--out", "o", "--only", "cpu_adam", "--storage-dir", "d", f, "1024"}).find(f), std::string::npos) << f;
  }
}

TEST(Options, CommandLineIsRecordedQuoted) {
  const auto cmd = parse_command_line({"--out", "my dir", "--quick"});
  EXPECT_EQ(cmd.options.command_line, "trainsim-calibrate --out 'my dir' --quick");
}

}  // namespace
}  // namespace trainsim::calibrate
