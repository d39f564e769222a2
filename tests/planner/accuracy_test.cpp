// The measured accuracy every answer states (planner/accuracy.hpp): the features a configuration
// is grouped by and the card's statistics on a summary written here by hand (the card compiled
// into the binary is held to the committed runs by tests/planner/accuracy_measured_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "accuracy.hpp"
#include "profile_loader.hpp"

namespace trainsim::planner {
namespace {

wl::Strategy strategy(int dp, int tp, int pp, int zero) {
  wl::Strategy s;
  s.dp = dp;
  s.tp = tp;
  s.pp = pp;
  s.gpus = dp * tp * pp;
  s.zero_stage = zero;
  return s;
}

using Features = std::vector<std::string>;

TEST(StrategyFeatures, NameWhatAConfigurationExercises) {
  EXPECT_EQ(strategy_features(strategy(1, 1, 1, 0)), Features({"stack idealized", "single GPU"}));
  // ZeRO partitions over data-parallel ranks: on one GPU there is nothing for it to do.
  EXPECT_EQ(strategy_features(strategy(1, 1, 1, 3)), Features({"stack idealized", "single GPU"}));
  EXPECT_EQ(strategy_features(strategy(4, 1, 1, 0)), Features({"stack idealized", "data parallel"}));
  wl::Strategy infinity = strategy(4, 4, 1, 3);
  infinity.nodes = 2;
  infinity.offload_params = wl::OffloadTarget::NVME;
  infinity.offload_optimizer = wl::OffloadTarget::NVME;  // named once
  infinity.recompute = wl::Recompute::FULL;
  EXPECT_EQ(strategy_features(infinity), Features({"stack idealized", "several nodes", "ZeRO-3", "tensor parallel", "NVMe offload", "activation recompute"}));
  wl::Strategy pipe = strategy(1, 1, 4, 0);
  pipe.schedule = wl::Schedule::GPIPE;
  EXPECT_EQ(strategy_features(pipe), Features({"stack idealized", "pipeline (gpipe)"}));
  wl::Strategy hydra = strategy(1, 1, 1, 0);
  hydra.gpus = 4;
  hydra.schedule = wl::Schedule::HYDRA;
  hydra.stack.kind = wl::StackKind::PYTORCH;
  EXPECT_EQ(strategy_features(hydra), Features({"stack pytorch", "Hydra"}));
  wl::Strategy offload = strategy(2, 1, 1, 3);
  offload.offload_optimizer = wl::OffloadTarget::CPU;
  EXPECT_EQ(strategy_features(offload), Features({"stack idealized", "ZeRO-3", "CPU offload"}));
}

nlohmann::json summary() {
  // Three runs: a ZeRO-3 run at -4% step and +1% memory, another at +10% and -3%, a pipeline at
  // +2% with no memory row; a row of a run not listed, and a run that was not simulated, ignored.
  return nlohmann::json::parse(R"json({
    "provenance": {"inputs": ["somewhere/measured/x/a.json", "somewhere/measured/b.json"]},
    "runs": [
      {"name": "a", "gpu": "G", "gpus": 2, "stack": "s1", "features": ["ZeRO-3"]},
      {"name": "b", "gpu": "G", "gpus": 4, "stack": "s2", "features": ["ZeRO-3", "CPU offload"]},
      {"name": "c", "gpu": "H", "gpus": 1, "stack": "s1", "features": ["single GPU", "pipeline (1f1b)"]},
      {"name": "d", "gpu": "G", "gpus": 2, "stack": "s1", "features": ["tensor parallel"]}
    ],
    "rows": [
      {"name": "a", "metric": "step_time", "error_pct": -4.0},
      {"name": "a", "metric": "peak_allocated", "error_pct": 1.0},
      {"name": "a", "metric": "peak_reserved", "error_pct": -30.0},
      {"name": "b", "metric": "step_time", "error_pct": 10.0},
      {"name": "b", "metric": "peak_allocated", "error_pct": -3.0},
      {"name": "c", "metric": "step_time", "error_pct": 2.0},
      {"name": "d", "metric": "step_time", "error_pct": null, "error": "not simulated"},
      {"name": "z", "metric": "step_time", "error_pct": 50.0}
    ]})json");
}

TEST(AccuracyCard, GroupsTheRunsByTheConfigurationsFeatures) {
  wl::Strategy s = strategy(8, 2, 1, 3);
  s.offload_optimizer = wl::OffloadTarget::CPU;
  const AccuracyCard card = accuracy_card({summary()}, s, hw::builtin_profile("dgx2"));
  ASSERT_EQ(card.sets.size(), 1u);
  const AccuracySet& set = card.sets[0];
  EXPECT_FALSE(set.published);
  EXPECT_EQ(set.all.runs, 3);
  EXPECT_DOUBLE_EQ(set.all.step_mean_pct, (4.0 + 10.0 + 2.0) / 3);
  EXPECT_DOUBLE_EQ(set.all.step_worst_pct, 10.0);
  EXPECT_EQ(set.all.memory_runs, 2);
  EXPECT_DOUBLE_EQ(set.all.memory_mean_pct, 2.0);
  EXPECT_DOUBLE_EQ(set.all.memory_worst_pct, -3.0);
  ASSERT_EQ(set.features.size(), 2u);
  EXPECT_EQ(set.features[0].what, "ZeRO-3");
  EXPECT_EQ(set.features[0].runs, 2);
  EXPECT_DOUBLE_EQ(set.features[0].step_mean_pct, 7.0);
  EXPECT_EQ(set.features[1].what, "CPU offload");
  EXPECT_EQ(set.features[1].runs, 1);
  EXPECT_DOUBLE_EQ(set.features[1].step_worst_pct, 10.0);
  // "tensor parallel": the only run with it was not simulated, so nothing measured it.
  EXPECT_EQ(card.not_measured, Features({"stack idealized", "tensor parallel"}));
  EXPECT_EQ(set.gpus, Features({"G", "H"}));
  EXPECT_EQ(set.stacks, Features({"s1", "s2"}));
  EXPECT_EQ(set.sources, Features({"somewhere/measured"}));
  EXPECT_EQ(set.fewest_gpus, 1);
  EXPECT_EQ(set.most_gpus, 4);
  EXPECT_FALSE(card.profile_calibrated);  // dgx2's figures are published ones
  const std::string text = accuracy_text(card, "#1");
  EXPECT_NE(text.find("3 runs on 1 to 4 x G, H"), std::string::npos) << text;
  EXPECT_NE(text.find("no measured or published run yet: stack idealized, tensor parallel"), std::string::npos) << text;
  EXPECT_NE(text.find("dgx2 is not a calibrated profile"), std::string::npos) << text;
}

// A published comparison is a set of its own, after the measured runs; a feature only it has is
// not listed as unmeasured.
TEST(AccuracyCard, PublishedRunsAreASetOfTheirOwn) {
  const nlohmann::json published = nlohmann::json::parse(R"json({
    "kind": "trainsim.published_comparison",
    "provenance": {"inputs": ["paper/table.md"], "source": "A paper's table", "profile": "dgx-a100"},
    "runs": [{"name": "p1", "gpu": "A100", "gpus": 512, "stack": "theirs", "features": ["tensor parallel", "several nodes"]},
             {"name": "p2", "gpu": "A100", "gpus": 1024, "stack": "theirs", "features": ["tensor parallel", "several nodes"]}],
    "rows": [{"name": "p1", "metric": "step_time", "error_pct": 3.0}, {"name": "p2", "metric": "step_time", "error_pct": -5.0}]})json");
  wl::Strategy s = strategy(8, 2, 1, 3);
  s.nodes = 2;
  const AccuracyCard card = accuracy_card({published, summary()}, s, hw::builtin_profile("dgx2"));
  ASSERT_EQ(card.sets.size(), 2u);
  EXPECT_FALSE(card.sets[0].published);  // measured first, whatever the order given
  EXPECT_EQ(card.sets[0].all.runs, 3);
  const AccuracySet& paper = card.sets[1];
  EXPECT_TRUE(paper.published);
  EXPECT_EQ(paper.title, "A paper's table");
  EXPECT_EQ(paper.all.runs, 2);
  EXPECT_DOUBLE_EQ(paper.all.step_mean_pct, 4.0);
  EXPECT_DOUBLE_EQ(paper.all.step_worst_pct, -5.0);
  EXPECT_EQ(paper.all.memory_runs, 0);
  ASSERT_EQ(paper.features.size(), 2u);
  EXPECT_EQ(paper.features[0].what, "several nodes");
  EXPECT_EQ(card.not_measured, Features({"stack idealized"}));
  EXPECT_NE(accuracy_text(card, "#1").find("Against published runs (mean |error|, worst): A paper's table, 2 runs on 512 to 1024 x A100"),
            std::string::npos)
      << accuracy_text(card, "#1");
}

TEST(AccuracyCard, ACalibratedProfileCarriesNoWarning) {
  const AccuracyCard card = accuracy_card({summary()}, strategy(1, 1, 1, 0), hw::builtin_profile("h200x4-measured"));
  EXPECT_TRUE(card.profile_calibrated);
  EXPECT_EQ(accuracy_text(card, "#1").find("not a calibrated profile"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::planner
