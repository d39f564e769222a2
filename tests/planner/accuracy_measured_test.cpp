// The accuracy card compiled into the binary (planner/accuracy.hpp) against the committed measured
// runs themselves: each run of reports/validation/measured and reports/validation/reference is
// predicted afresh (as `trainsim validate` does, planner/validate/validation.hpp), its errors taken
// here from the predicted and the measured values, and the compiled-in card's measured set must
// hold their count, mean |error| and worst error. A card compiled from a summary that no longer
// matches the model, or a card that pools the rows wrongly, fails here; the summaries' own currency
// is tests/validation/measured_runs_test.cpp's and reference_rows_test.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "accuracy.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"
#include "validation.hpp"

namespace trainsim::planner {
namespace {

struct Pooled {
  int n = 0;
  double sum_abs = 0, worst = 0;
  void add(double error_pct) {
    ++n;
    sum_abs += std::fabs(error_pct);
    if (std::fabs(error_pct) > std::fabs(worst)) worst = error_pct;
  }
};

TEST(CompiledAccuracyCard, HoldsTheErrorsOfTheCommittedRunsPredictedAfresh) {
  Pooled step, memory;
  for (const char* dir : {"reports/validation/measured", "reports/validation/reference"}) {
    const ValidationInputs in = read_validation_inputs(std::string(TRAINSIM_SOURCE_DIR) + "/" + dir, "", InputFlags{});
    ASSERT_FALSE(in.runs.empty()) << dir;
    for (const MeasuredRun& run : in.runs) {
      const RunValidation v = validate_run(run, InputFlags{}, false, false);
      if (!v.error.empty()) continue;  // not simulated: no error rows
      for (const ValidationRow& r : v.rows) {
        if (r.metric != "step_time" && r.metric != "peak_allocated") continue;
        ASSERT_GT(r.measured, 0) << run.name << " " << r.metric;
        const double error_pct = 100 * (r.predicted - r.measured) / r.measured;
        (r.metric == "step_time" ? step : memory).add(error_pct);
      }
    }
  }
  ASSERT_GT(step.n, 0);
  ASSERT_GT(memory.n, 0);
  const AccuracyCard card = accuracy_card(wl::Strategy{}, hw::builtin_profile("h200x4-measured"));
  ASSERT_TRUE(card.unavailable.empty()) << card.unavailable;
  ASSERT_FALSE(card.sets.empty());
  const AccuracyLine& all = card.sets[0].all;
  EXPECT_FALSE(card.sets[0].published);
  const char* stale = " (the compiled-in summaries are stale or pooled wrongly: regenerate them as "
                      "tests/validation/measured_runs_test.cpp and reference_rows_test.cpp say, then rebuild)";
  EXPECT_EQ(all.runs, step.n) << stale;
  EXPECT_EQ(all.memory_runs, memory.n) << stale;
  // summary.json carries each error to the double (17 digits): the card's figures agree to 1e-9 points.
  EXPECT_NEAR(all.step_mean_pct, step.sum_abs / step.n, 1e-9) << stale;
  EXPECT_NEAR(all.step_worst_pct, step.worst, 1e-9) << stale;
  EXPECT_NEAR(all.memory_mean_pct, memory.sum_abs / memory.n, 1e-9) << stale;
  EXPECT_NEAR(all.memory_worst_pct, memory.worst, 1e-9) << stale;
  EXPECT_EQ(card.sets[0].sources, std::vector<std::string>({"reports/validation/measured", "reports/validation/reference"}));
}

// The published set: Megatron-LM's Table 1 (Narayanan et al., SC'21) has six rows with pipeline
// parallelism, 39.1 B to 1 T parameters on 512 to 3,072 A100s (its 1.7 B to 18.4 B rows run no
// pipeline and are not replayed as pipelines).
TEST(CompiledAccuracyCard, HoldsMegatronLmTableOnesPipelinedRows) {
  const AccuracyCard card = accuracy_card(wl::Strategy{}, hw::builtin_profile("h200x4-measured"));
  ASSERT_EQ(card.sets.size(), 3u);
  const AccuracySet& paper = card.sets[1];
  EXPECT_TRUE(paper.published);
  EXPECT_EQ(paper.all.runs, 6);
  EXPECT_EQ(paper.fewest_gpus, 512);
  EXPECT_EQ(paper.most_gpus, 3072);
}

// DeepSpeed's published points (reports/validation/deepspeed_published/results.json, the test's own
// record of each replay in TFLOP/s): every replayed point is a run of the card's third set, its
// step-time error published / predicted TFLOP/s - 1 (the same FLOPs in both).
TEST(CompiledAccuracyCard, HoldsDeepSpeedsReplayedPublishedPoints) {
  const auto results = test::read_source_json("reports/validation/deepspeed_published/results.json");
  Pooled step;
  for (const auto& row : results["rows"]) {
    if (!row.contains("predicted_tflops_per_gpu")) continue;
    step.add(100 * (row["published_tflops_per_gpu"].get<double>() / row["predicted_tflops_per_gpu"].get<double>() - 1));
  }
  ASSERT_GT(step.n, 0);
  const AccuracyCard card = accuracy_card(wl::Strategy{}, hw::builtin_profile("dgx2"));
  ASSERT_EQ(card.sets.size(), 3u);
  const AccuracySet& ds = card.sets[2];
  EXPECT_TRUE(ds.published);
  EXPECT_EQ(ds.all.runs, step.n);
  EXPECT_NEAR(ds.all.step_mean_pct, step.sum_abs / step.n, 1e-6);
  EXPECT_NEAR(ds.all.step_worst_pct, step.worst, 1e-6);
  EXPECT_EQ(ds.fewest_gpus, 1);
  EXPECT_EQ(ds.most_gpus, 1024);
}

}  // namespace
}  // namespace trainsim::planner
