// Shared by the `trainsim validate` CLI tests (validate_cli_test.cpp: inputs, costing and bad
// input; validate_report_test.cpp: the report's sections): the committed runs they start from.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace trainsim::test::validate_cli {

// The 0.36 B GPT's single-GPU and 2-GPU runs, with the profile of the 4 x H200 host they ran on.
inline const std::string GPT_RUNS = "reports/validation/measured/gpt-small-data-parallel-h200x2/";
inline const std::string RUN = GPT_RUNS + "h200x1_single_L24-h1024_mb4x2";
inline const std::string GPT_RUNS_PROFILE = "host.profile.json";
// The 0.36 B GPT's 2-stage GPipe and 1F1B runs, with the profile of their (faster) host.
inline const std::string PIPELINE_RUNS = "reports/validation/measured/gpt-small-pipeline-h200x2/";

inline std::string q(const std::string& s) { return "'" + s + "'"; }

// A copy of the committed single-GPU run (its model and the profile of its host beside it) in
// `dir`, with `edit` applied to its JSON.
inline std::string copy_run(const ScratchDir& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json run = read_source_json(RUN + ".json");
  run["measured"].erase("trace_summary");
  edit(run);
  dir.write("h200x1_single_L24-h1024_mb4x2.model.json", read_file(source_path(RUN + ".model.json")));
  dir.write(GPT_RUNS_PROFILE, read_file(source_path(GPT_RUNS + GPT_RUNS_PROFILE)));
  return dir.write("run.json", run.dump(1));
}

// The smallest Chrome trace with GPU activity: two kernels, one of them NCCL's.
inline const char* const TINY_TRACE =
    R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "ts": 1000, "dur": 80000},)"
    R"( {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 60000, "dur": 50000}]})";

// Bad input: `validate` with a case's arguments (made in a fresh directory) and `extra` must exit 2,
// print nothing, say every part of the message and write no report into that directory.
struct BadCase {
  const char* what;
  std::function<std::string(const ScratchDir&)> args;  // the command's arguments
  std::vector<std::string> message;                     // what the error must say
};

inline void expect_refused(const std::vector<BadCase>& cases, const std::string& extra) {
  for (const auto& c : cases) {
    ScratchDir dir;
    const CommandResult r = run_trainsim("validate " + c.args(dir) + " " + extra);
    EXPECT_EQ(r.exit_code, 2) << c.what << ": " << r.err << r.out;
    EXPECT_TRUE(r.out.empty()) << c.what << ": printed " << r.out;
    for (const auto& m : c.message) EXPECT_NE(r.err.find(m), std::string::npos) << c.what << ": no \"" << m << "\" in " << r.err;
    for (const char* f : {"report.md", "summary.json", "step_time.svg"}) {
      EXPECT_FALSE(std::filesystem::exists(dir.path() / f)) << c.what << ": wrote " << f;
    }
  }
}

}  // namespace trainsim::test::validate_cli
