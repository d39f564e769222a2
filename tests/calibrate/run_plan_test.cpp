// --budget's plan (calibrate/run_plan.cpp): which parts run, at how many sizes, and what is said
// about the rest. Expected values worked out by hand from the items' seconds.
#include <gtest/gtest.h>

#include "run_plan.hpp"

namespace trainsim::calibrate {
namespace {

const std::vector<PlanItem> ITEMS{{"gemm", false, {5, 103}, ""},
                                  {"nccl", false, {1.6, 4}, ""},
                                  {"torch_kernels", true, {1, 2, 4}, "sizes"},
                                  {"storage", false, {31, 75}, ""}};

TEST(RunPlan, WithoutABudgetEveryPartRunsAllItsSizes) {
  const RunPlan p = plan_run(ITEMS, std::nullopt, 1);
  ASSERT_EQ(p.parts.size(), 4u);
  EXPECT_EQ(p.parts[0].level, 2);
  EXPECT_EQ(p.parts[2].level, 3);
  EXPECT_DOUBLE_EQ(p.seconds, 103 + 4 + 4 + 1 + 75);  // the driver's start once
  EXPECT_TRUE(p.left_out.empty());
}

TEST(RunPlan, ABudgetTakesFirstLevelsInOrderThenRaisesWhatFits) {
  // First levels in order: gemm 5, nccl 1.6, torch_kernels 1 + start 1 = 8.6; storage (31) does not fit.
  // Raising in order: gemm full +98 no, nccl full +2.4 = 11 no, torch_kernels 3 sizes +3 no, 2 sizes +1 = 9.6.
  const RunPlan p = plan_run(ITEMS, 10.0, 1);
  ASSERT_EQ(p.parts.size(), 3u);
  EXPECT_EQ(p.parts[0].name, "gemm");
  EXPECT_EQ(p.parts[0].level, 1);
  EXPECT_EQ(p.parts[1].level, 1);
  EXPECT_EQ(p.parts[2].name, "torch_kernels");
  EXPECT_EQ(p.parts[2].level, 2);
  EXPECT_NEAR(p.seconds, 9.6, 1e-9);
  ASSERT_EQ(p.left_out.size(), 4u);
  EXPECT_EQ(p.left_out[0], "gemm: quick sizes (full sizes need about 98 s more than the budget of 10 s leaves)");
  EXPECT_EQ(p.left_out[2], "torch_kernels: 2 of 3 sizes (3 of 3 sizes need about 2 s more than the budget of 10 s leaves)");
  EXPECT_EQ(p.left_out[3], "storage: left out (about 31 s at quick sizes; the budget of 10 s is spent)");
}

TEST(RunPlan, TheDriversStartCountsOnceAndOnlyWithAFrameworkPart) {
  const std::vector<PlanItem> two{{"torch_a", true, {3}, "sizes"}, {"torch_b", true, {3}, "sizes"}};
  EXPECT_EQ(plan_run(two, 10.0, 4).parts.size(), 2u);  // start 4 + 3 + 3
  EXPECT_EQ(plan_run(two, 9.0, 4).parts.size(), 1u);
  EXPECT_TRUE(plan_run(two, 6.0, 4).parts.empty());
  EXPECT_DOUBLE_EQ(plan_run({{"gemm", false, {5}, ""}}, 10.0, 4).seconds, 5);
}

}  // namespace
}  // namespace trainsim::calibrate
