// DeepSpeed's ZeRO-3 runtime in the data-parallel schedule: the release rule (DataParallelPlan's
// reuse_window_params; deepspeed/runtime/zero/partitioned_param_coordinator.py,
// __params_to_release): a later use of a unit takes the earlier gather when the computes between
// the two pass fewer parameters than the window; the hooks' wait for every gather issued before
// them (hook_before_unit; fetch_sub_module's wait_stream); the gradient bucket reduced at the next
// backward compute, its partition copied to the CPU with the host waiting (reduce_at_next_backward,
// grad_offload_blocks_host; stage3.py).
#include "data_parallel_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

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


// One layer of four units, forward then backward, one gather a compute, one prefetched.
DataParallelPlan one_layer() {
  DataParallelPlan p;
  p.unit_layer = {0, 0, 0, 0};
  p.gather_params = true;
  p.reduce_every_micro_batch = true;
  return p;
}

// For each compute (forward order of the schedule), the (unit, pass) of the gathers it waits for.
std::vector<std::set<std::pair<int, Pass>>> gathers_waited(const DataParallelPlan& p) {
  const auto s = data_parallel_schedule(p);
  std::vector<std::set<std::pair<int, Pass>>> out;
  for (const auto& i : s) {
    if (i.kind != Instr::FORWARD && i.kind != Instr::BACKWARD) continue;
    std::set<std::pair<int, Pass>> waits;
    for (int a : i.after) {
      const ScheduleItem& g = s[static_cast<std::size_t>(a)];
      if (g.kind == Instr::GATHER_PARAMS) waits.insert({g.unit, g.pass});
    }
    out.push_back(waits);
  }
  return out;
}

TEST(DeepSpeedCoordinator, HooksWaitForEveryGatherIssuedBeforeThem) {
  using P = std::pair<int, Pass>;
  DataParallelPlan p = one_layer();
  // Without the hooks each compute waits for its own gather only.
  auto w = gathers_waited(p);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[1], (std::set<P>{{1, Pass::FORWARD}}));
  // A submodule without parameters before units 1 and 2 (Megatron-LM's attention core, the MLP's
  // norm), none between units 2 and 3 (its GeLU is a function). The gather of unit q is issued
  // once compute q - 2 has ended (one unit prefetched), at the hook between q - 2 and q - 1.
  p.hook_before_unit = {1, 1, 1, 0};
  w = gathers_waited(p);
  ASSERT_EQ(w.size(), 8u);
  // Computes F0 F1 F2 F3 B3 B2 B1 B0. F0: the step's first, its own gather only.
  EXPECT_EQ(w[0], (std::set<P>{{0, Pass::FORWARD}}));
  // F1 and F2 also wait for the next unit's gather, issued at the hook before them.
  EXPECT_EQ(w[1], (std::set<P>{{1, Pass::FORWARD}, {2, Pass::FORWARD}}));
  EXPECT_EQ(w[2], (std::set<P>{{2, Pass::FORWARD}, {3, Pass::FORWARD}}));
  // F3: no hook between units 2 and 3; the gather issued with it (B3's) overlaps it.
  EXPECT_EQ(w[3], (std::set<P>{{3, Pass::FORWARD}}));
  // B3: the pass changes (the loss, the layer's hooks): it waits for B2's gather too.
  EXPECT_EQ(w[4], (std::set<P>{{3, Pass::BACKWARD}, {2, Pass::BACKWARD}}));
  // B2: none between units 3 and 2; B1: the norm's hook between 2 and 1 issued B0's gather.
  EXPECT_EQ(w[5], (std::set<P>{{2, Pass::BACKWARD}}));
  EXPECT_EQ(w[6], (std::set<P>{{1, Pass::BACKWARD}, {0, Pass::BACKWARD}}));
  EXPECT_EQ(w[7], (std::set<P>{{0, Pass::BACKWARD}}));
}

// The schedule's items from the first backward on, as text: kind, and the bucket or unit.
std::vector<std::string> backward_items(const DataParallelPlan& p) {
  const auto s = data_parallel_schedule(p);
  std::vector<std::string> out;
  bool started = false;
  for (const auto& i : s) {
    started = started || i.kind == Instr::BACKWARD;
    if (!started || i.kind == Instr::GATHER_PARAMS) continue;
    const int id = i.kind == Instr::BACKWARD ? i.unit : i.bucket;
    out.push_back(std::string(to_string(i.kind)) + " " + std::to_string(id) + (i.host_waits ? " host_waits" : ""));
  }
  return out;
}

TEST(DeepSpeedCoordinator, BucketReducedAtTheNextBackwardAndItsCopyBlocksTheHost) {
  DataParallelPlan p = one_layer();
  // A bucket a unit (units 3, 2, 1, 0 in buckets 0, 1, 2, 3), copied to the CPU optimizer.
  p.bucket_of_unit = {3, 2, 1, 0};
  p.offload_grads = true;
  using V = std::vector<std::string>;
  // Without: each bucket reduced after its own backward.
  EXPECT_EQ(backward_items(p), (V{"backward 3", "reduce_grads 0", "offload_grads 0", "backward 2", "reduce_grads 1", "offload_grads 1",
                                  "backward 1", "reduce_grads 2", "offload_grads 2", "backward 0", "reduce_grads 3", "offload_grads 3",
                                  "optimizer_step -1"}));
  // DeepSpeed: a bucket is reduced within the next backward compute; the copies block the host;
  // the last bucket at the backward's end, which the host waits for as well.
  p.reduce_at_next_backward = true;
  p.grad_offload_blocks_host = true;
  const V got = backward_items(p);
  EXPECT_EQ(got, (V{"backward 3", "backward 2", "reduce_grads 0", "offload_grads 0 host_waits", "backward 1", "reduce_grads 1",
                    "offload_grads 1 host_waits", "backward 0", "reduce_grads 2", "offload_grads 2 host_waits", "reduce_grads 3",
                    "offload_grads 3 host_waits", "optimizer_step -1"}));
  // Each reduction still waits only for the backward that made its gradients.
  const auto s = data_parallel_schedule(p);
  for (const auto& i : s) {
    if (i.kind != Instr::REDUCE_GRADS) continue;
    ASSERT_EQ(i.after.size(), 1u);
    const ScheduleItem& made_by = s[static_cast<std::size_t>(i.after[0])];
    EXPECT_EQ(made_by.kind, Instr::BACKWARD);
    EXPECT_EQ(made_by.unit, 3 - i.bucket);
  }
  // With two micro-batches only the last one's copies block (the gradient accumulation boundary);
  // the first one's backward still ends in a reduction the host waits for.
  p.micro_batches = 2;
  const V two = backward_items(p);
  const V first(two.begin(), two.begin() + 11);
  EXPECT_EQ(first, (V{"backward 3", "backward 2", "reduce_grads 0", "offload_grads 0", "backward 1", "reduce_grads 1", "offload_grads 1",
                      "backward 0", "reduce_grads 2", "offload_grads 2", "reduce_grads 3"}));
  EXPECT_EQ(two[11], "offload_grads 3 host_waits");
  const V last(two.end() - 13, two.end());
  EXPECT_EQ(last, got);
  p.micro_batches = 1;
  // Without the optimizer on the CPU only the backward's last reduction blocks the host.
  p.offload_grads = false;
  p.grad_offload_blocks_host = false;
  EXPECT_EQ(backward_items(p), (V{"backward 3", "backward 2", "reduce_grads 0", "backward 1", "reduce_grads 1", "backward 0",
                                  "reduce_grads 2", "reduce_grads 3 host_waits", "optimizer_step -1"}));
}

}  // namespace
}  // namespace trainsim::sim
