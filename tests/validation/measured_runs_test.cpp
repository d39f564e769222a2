// Predicted against measured (issue 10) on the committed measured runs: the committed report is
// what `trainsim validate` writes today (byte for byte), and the tolerances hold on every row not
// listed in reports/validation/known_gaps.json, while every listed row still misses (a listed row
// that comes within its target must leave the list). The tolerance tests read the committed
// summary.json, which the first test proves current; only that test regenerates (it simulates
// every committed run).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace trainsim::test {
namespace {

const char* const REPORT_FILES[] = {"report.md", "summary.json", "step_time.svg", "peak_allocated.svg", "errors.svg"};

// The targets of issue 10.
constexpr double ROW_TOLERANCE_PCT = 10.0;
constexpr double MEAN_TOLERANCE_PCT = 5.0;
constexpr double BUBBLE_TOLERANCE = 0.03;

class MeasuredRuns : public ::testing::Test {
 protected:
  // One regeneration for every test here (it simulates all the committed runs).
  static void SetUpTestSuite() {
    scratch_ = new ScratchDir();
    result_ = new CommandResult(run_command(
        "cd '" + std::string(TRAINSIM_SOURCE_DIR) + "' && '" + std::string(TRAINSIM_BINARY) +
        "' validate --measured reports/validation/measured --known-gaps reports/validation/known_gaps.json --report-dir '" +
        scratch_->path().string() + "'"));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete scratch_;
  }

  static ScratchDir* scratch_;
  static CommandResult* result_;
};
ScratchDir* MeasuredRuns::scratch_ = nullptr;
CommandResult* MeasuredRuns::result_ = nullptr;

TEST_F(MeasuredRuns, CommittedReportIsCurrent) {
  ASSERT_EQ(result_->exit_code, 0) << result_->err;
  for (const char* f : REPORT_FILES) {
    const std::string committed = read_file(source_path(std::string("reports/validation/") + f));
    const std::string regenerated = read_file((scratch_->path() / f).string());
    EXPECT_TRUE(committed == regenerated)
        << "reports/validation/" << f << " is stale; regenerate it from the repository root with\n"
        << "  build/trainsim validate --measured reports/validation/measured --known-gaps reports/validation/known_gaps.json "
           "--report-dir reports/validation";
  }
}

// The measured-run JSONs committed under reports/validation/measured/ (the files whose "kind" is
// trainsim.measured_run; models, profiles and failure records are not runs): each must have a row.
std::size_t committed_measured_runs() {
  namespace fs = std::filesystem;
  std::size_t runs = 0;
  const fs::path root = fs::path(TRAINSIM_SOURCE_DIR) / "reports/validation/measured";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".json" || file.ends_with(".model.json") ||
        file.ends_with(".profile.json"))
      continue;
    const nlohmann::json run = read_source_json(fs::relative(entry.path(), TRAINSIM_SOURCE_DIR).string());
    if (run.is_object() && run.value("kind", "") == "trainsim.measured_run") ++runs;
  }
  return runs;
}

nlohmann::json committed_summary() { return read_source_json("reports/validation/summary.json"); }

TEST(MeasuredRunsSummary, EveryRunIsSimulatedAndEveryRowHasItsFields) {
  const nlohmann::json s = committed_summary();
  EXPECT_EQ(s.at("schema_version"), 1);
  EXPECT_EQ(s.at("kind"), "trainsim.validation_summary");
  EXPECT_TRUE(s.at("provenance").contains("tool"));
  std::size_t step_rows = 0;
  for (const auto& r : s.at("rows")) {
    for (const char* key : {"name", "metric", "predicted", "measured", "error_pct"}) ASSERT_TRUE(r.contains(key)) << r.dump();
    EXPECT_FALSE(r.contains("error")) << "not simulated: " << r.dump();
    if (r.at("metric") == "step_time") ++step_rows;
  }
  EXPECT_EQ(step_rows, committed_measured_runs());
}

TEST(MeasuredRunsSummary, TolerancesHoldOnEveryRowNotListedAndListedRowsStillMiss) {
  const nlohmann::json s = committed_summary();
  for (const auto& r : s.at("rows")) {
    if (!r.at("toleranced").get<bool>()) continue;
    const std::string metric = r.at("metric");
    const bool bubble = metric == "bubble_fraction";
    const double error = bubble ? r.at("error_abs").get<double>() : r.at("error_pct").get<double>();
    const bool within = std::abs(error) <= (bubble ? BUBBLE_TOLERANCE : ROW_TOLERANCE_PCT);
    EXPECT_EQ(within, r.at("within_tolerance").get<bool>()) << r.dump();
    const std::string what = r.at("name").get<std::string>() + " " + metric + " (error " + std::to_string(error) + ")";
    if (r.contains("known_gap")) {
      EXPECT_FALSE(within) << what << " is listed in reports/validation/known_gaps.json but is now within its target: "
                           << "take it off the list";
    } else {
      EXPECT_TRUE(within) << what << " is outside its target and not listed in reports/validation/known_gaps.json";
    }
  }
  // The mean absolute error of each metric over the rows the model claims to predict.
  for (const char* metric : {"step_time", "peak_allocated"}) {
    const auto& g = s.at("stats").at(metric).at("without_known_gaps");
    EXPECT_GT(g.at("rows").get<int>(), 0) << metric;
    EXPECT_LE(g.at("mean_abs_error_pct").get<double>(), MEAN_TOLERANCE_PCT) << metric;
  }
}

// The reserved peak has no target in issue 10; the caching-allocator model over the replay's memory
// events (sim/engine/reserved_memory.hpp) is held to the mean target for peak memory, 5%, over all
// the PyTorch runs (the allocated peak that stood in for it before was 10.4% off).
TEST(MeasuredRunsSummary, ReservedPeakMeanWithinThePeakMemoryMeanTarget) {
  const nlohmann::json s = committed_summary();
  const auto& g = s.at("stats").at("peak_reserved").at("all_rows");
  EXPECT_EQ(g.at("rows").get<int>(), 55);
  EXPECT_LE(g.at("mean_abs_error_pct").get<double>(), MEAN_TOLERANCE_PCT);
}

// The report says in words whether each mean over all rows meets its target, as summary.json's
// numbers do (the targets are the issue's, here, not the tool's copy of them).
TEST(MeasuredRunsSummary, ReportStatesWhetherEachMeanOverAllRowsMeetsItsTarget) {
  const nlohmann::json s = committed_summary();
  const std::string report = read_file(std::string(TRAINSIM_SOURCE_DIR) + "/reports/validation/report.md");
  for (const auto& [metric, words] : std::map<std::string, std::string>{{"step_time", "mean step-time error over all rows is "},
                                                                         {"peak_allocated", "mean peak-memory error "}}) {
    const double mean = s.at("stats").at(metric).at("all_rows").at("mean_abs_error_pct").get<double>();
    const std::size_t at = report.find(words);
    if (at == std::string::npos) {
      // Only the sentence of a report whose targets all hold leaves the means out.
      EXPECT_NE(report.find("**The targets hold on every row.**"), std::string::npos) << metric;
      continue;
    }
    const std::string sentence = report.substr(at, report.find(')', at) - at);
    const std::string verdict = mean <= MEAN_TOLERANCE_PCT ? "(within" : "(outside";
    EXPECT_NE(sentence.find(verdict), std::string::npos) << metric << " mean " << mean << ": " << sentence;
  }
}

// The second prediction of the FSDP2 offload rows (summary.json's predicted_with_pages_faulting:
// the accumulating copies' pages faulting in) against what was measured of those copies
// (workloads/stacks/training_stacks.md, "FSDP2"): the 0.36 B GPT's copies fault at 2 ranks, so that
// row's faulting-pages step must come within the step tolerance of its measured step; at 4 ranks
// they stay resident (the same probe), so those rows' faulting-pages steps must lie above their
// measurements by more than the tolerance.
TEST(MeasuredRunsSummary, FaultingPagesPredictTheRowWhoseCopiesFault) {
  const nlohmann::json s = committed_summary();
  std::map<std::string, double> error_pct;
  for (const auto& r : s.at("rows")) {
    if (r.at("metric") == "step_time" && r.contains("predicted_with_pages_faulting")) {
      error_pct[r.at("name")] = 100 * (r.at("predicted_with_pages_faulting").get<double>() / r.at("measured").get<double>() - 1);
    }
  }
  // The four offload rows of the 0.36 B and 2.65 B GPTs, and Llama 3 8B's, whose
  // copies below 32 MiB stayed resident on a host that ran slow: a known gap, not read here.
  ASSERT_EQ(error_pct.size(), 5u);
  ASSERT_EQ(error_pct.count("h200x4_fsdp2-offload_llama_L32-h4096_mb1x2"), 1u);
  EXPECT_LE(std::abs(error_pct.at("h200x2_fsdp2-offload_L24-h1024_mb4x2")), ROW_TOLERANCE_PCT);
  for (const char* resident : {"h200x4_fsdp2-offload_L24-h1024_mb4x2", "h200x4_fsdp2-offload_L32-h2560_mb1x2"}) {
    EXPECT_GT(error_pct.at(resident), ROW_TOLERANCE_PCT) << resident;
  }
}

}  // namespace
}  // namespace trainsim::test
