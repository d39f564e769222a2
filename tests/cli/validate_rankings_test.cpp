// `trainsim validate`'s answer to "which configuration wins": runs of one model on the same GPUs that
// ran different configurations are ordered by throughput, measured and predicted, and the report and
// summary.json say how many pairs the replay orders as measured and which it does not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "validate_cli_support.hpp"

namespace trainsim::test {
namespace {

using namespace validate_cli;

const std::string LLAMA_RUNS = "reports/validation/measured/llama-h200x4/";
const std::string ZERO2 = "h200x4_fsdp2-zero2_llama_L32-h4096_mb1x2";
const std::string GPIPE = "h200x4_pipe-gpipe_llama_L32-h4096_mb1x8";

// A copy of a committed Llama 3 8B run at 4 GPUs in `dir`, its step time
// multiplied by `step_scale`.
void copy_llama_run(const ScratchDir& dir, const std::string& name, double step_scale) {
  nlohmann::json run = read_source_json(LLAMA_RUNS + name + ".json");
  run["measured"].erase("trace_summary");
  run["measured"]["step_time_s"] = run["measured"]["step_time_s"].get<double>() * step_scale;
  dir.write(name + ".model.json", read_file(source_path(LLAMA_RUNS + name + ".model.json")));
  dir.write(name + ".json", run.dump(1));
}

nlohmann::json rankings_of(const ScratchDir& runs, const ScratchDir& out, std::string& report) {
  const CommandResult r = run_trainsim("validate --measured " + q(runs.path().string()) + " --no-trace --report-dir " + q(out.path().string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  report = read_file(out.path() / "report.md");
  return nlohmann::json::parse(read_file(out.path() / "summary.json")).value("rankings", nlohmann::json());
}

TEST(ValidateRankings, TheReplayOrdersTheMeasuredAlternativesOrSaysWhichItDoesNot) {
  // As measured: ZeRO-2 578 ms for 8 sequences, GPipe 776 ms for 8; the replay has them in that order.
  ScratchDir as_measured, out1;
  copy_llama_run(as_measured, ZERO2, 1.0);
  copy_llama_run(as_measured, GPIPE, 1.0);
  std::string report;
  const nlohmann::json agree = rankings_of(as_measured, out1, report);
  ASSERT_TRUE(agree.is_object()) << "summary.json has no rankings";
  EXPECT_EQ(agree.at("pairs"), 1);
  EXPECT_EQ(agree.at("ordered_as_measured"), 1);
  EXPECT_EQ(agree.at("pairs_apart"), 1);
  EXPECT_NE(report.find("## Which configuration wins"), std::string::npos);
  EXPECT_NE(report.find("orders **1 of 1 pairs**"), std::string::npos) << report;

  // Had GPipe stepped in half its time it would have won; the replay's order then disagrees.
  ScratchDir flipped, out2;
  copy_llama_run(flipped, ZERO2, 1.0);
  copy_llama_run(flipped, GPIPE, 0.5);
  const nlohmann::json disagree = rankings_of(flipped, out2, report);
  EXPECT_EQ(disagree.at("ordered_as_measured"), 0);
  ASSERT_EQ(disagree.at("disagreements").size(), 1U);
  EXPECT_EQ(disagree.at("disagreements").at(0).at("measured_faster"), GPIPE);
  EXPECT_NE(report.find("- `" + GPIPE + "` over `" + ZERO2 + "`"), std::string::npos) << report;

  // One configuration alone is no choice: no section, no rankings; nor is one configuration run twice
  // under other names (the run's and its model file's), which is a rerun, not an alternative.
  ScratchDir alone, out3;
  copy_llama_run(alone, ZERO2, 1.0);
  nlohmann::json rerun = nlohmann::json::parse(read_file(alone.path() / (ZERO2 + ".json")));
  nlohmann::json rerun_model = nlohmann::json::parse(read_file(alone.path() / (ZERO2 + ".model.json")));
  rerun["name"] = ZERO2 + "_again";
  rerun["model"] = "again.model.json";
  rerun["measured"]["step_time_s"] = rerun["measured"]["step_time_s"].get<double>() * 1.5;
  rerun_model["name"] = "another-name";
  rerun_model["description"] = "the same model, described otherwise";
  alone.write("again.model.json", rerun_model.dump(1));
  alone.write("again.json", rerun.dump(1));
  EXPECT_TRUE(rankings_of(alone, out3, report).is_null());
  EXPECT_EQ(report.find("## Which configuration wins"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::test
