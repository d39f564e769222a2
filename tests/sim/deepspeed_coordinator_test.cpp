// DeepSpeed's ZeRO-3 release rule in the data-parallel schedule (DataParallelPlan's
// reuse_window_params; deepspeed/runtime/zero/partitioned_param_coordinator.py,
// __params_to_release): a later use of a unit takes the earlier gather when the computes between
// the two pass fewer parameters than the window.
#include "data_parallel_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace trainsim::sim {
namespace {

// Two layers of four submodules of 10 parameters each, full recompute, one micro-batch.
DataParallelPlan two_layers(double window) {
  DataParallelPlan p;
  p.unit_layer = {0, 0, 0, 0, 1, 1, 1, 1};
  p.unit_params.assign(p.unit_layer.size(), 10.0);
  p.checkpointed_layers = 2;
  p.gather_params = true;
  p.recompute_full = true;
  p.reuse_window_params = window;
  return p;
}

int gathers(const DataParallelPlan& p) {
  const auto s = data_parallel_schedule(p);
  return static_cast<int>(std::count_if(s.begin(), s.end(), [](const ScheduleItem& i) { return i.kind == Instr::GATHER_PARAMS; }));
}

TEST(DeepSpeedCoordinator, ReuseWindowDecidesWhichUsesGatherAgain) {
  // No window: forward, recompute and backward each gather all 8 submodules.
  EXPECT_EQ(gathers(two_layers(0)), 24);
  // 15 parameters: only a layer's last submodule, whose backward follows its recompute with
  // nothing between, keeps its gather (the next submodule is always examined); the third
  // submodule's backward comes after 20 parameters (the fourth's recompute and backward).
  EXPECT_EQ(gathers(two_layers(15)), 22);
  // 25: the third submodule's too; the second is 40 parameters away.
  EXPECT_EQ(gathers(two_layers(25)), 20);
  // Wide enough for everything within the micro-batch: each submodule gathered once, except the
  // first layer's, whose forward and recompute lie 100 parameters apart (the whole second
  // layer's forward, recompute and backward between them).
  EXPECT_EQ(gathers(two_layers(95)), 12);
  EXPECT_EQ(gathers(two_layers(1e9)), 8);
}

TEST(DeepSpeedCoordinator, NoReuseAcrossMicroBatches) {
  DataParallelPlan p = two_layers(1e9);
  p.micro_batches = 2;
  // The coordinator releases everything when a micro-batch's backward ends: each micro-batch
  // gathers every submodule once.
  EXPECT_EQ(gathers(p), 16);
}

}  // namespace
}  // namespace trainsim::sim
