// The data-parallel schedule is a pure function: its invariants are checked over many shapes,
// with no SimGrid and no hardware (as Megatron-LM tests get_schedule_table).
#include "data_parallel_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace trainsim::sim {
namespace {

DataParallelPlan plan_of(int layers, int micro_batches) {
  DataParallelPlan p;
  p.unit_layer.push_back(-1);
  for (int l = 0; l < layers; ++l) p.unit_layer.push_back(l);
  p.unit_layer.push_back(layers);
  p.checkpointed_layers = layers;
  p.micro_batches = micro_batches;
  return p;
}

int count(const std::vector<ScheduleItem>& s, Instr kind) {
  return static_cast<int>(std::count_if(s.begin(), s.end(), [&](const ScheduleItem& i) { return i.kind == kind; }));
}

void expect_dependencies_point_backwards(const std::vector<ScheduleItem>& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    for (int a : s[i].after) {
      EXPECT_GE(a, 0);
      EXPECT_LT(static_cast<std::size_t>(a), i) << to_string(s[i].kind) << " waits for a later instruction";
    }
  }
}

TEST(DataParallelSchedule, EveryBackwardFollowsItsForwardAndEveryUnitRunsOncePerMicroBatch) {
  for (int layers : {1, 2, 5}) {
    for (int mbs : {1, 3}) {
      const auto s = data_parallel_schedule(plan_of(layers, mbs));
      expect_dependencies_point_backwards(s);
      const int units = layers + 2;
      EXPECT_EQ(count(s, Instr::FORWARD), units * mbs);
      EXPECT_EQ(count(s, Instr::BACKWARD), units * mbs);
      EXPECT_EQ(count(s, Instr::OPTIMIZER_STEP), 1);
      EXPECT_EQ(s.back().kind, Instr::OPTIMIZER_STEP);
      std::set<std::pair<int, int>> forwarded;
      for (const auto& i : s) {
        if (i.kind == Instr::FORWARD) forwarded.insert({i.micro_batch, i.unit});
        if (i.kind == Instr::BACKWARD) {
          EXPECT_TRUE(forwarded.count({i.micro_batch, i.unit}));
        }
      }
    }
  }
}

TEST(DataParallelSchedule, GradientsReduceOnTheLastMicroBatchUnlessPartitioned) {
  DataParallelPlan p = plan_of(4, 3);
  p.bucket_of_unit = assign_buckets(std::vector<double>(6, 1.0), 2.0);  // two units per bucket
  auto s = data_parallel_schedule(p);
  EXPECT_EQ(count(s, Instr::REDUCE_GRADS), 3);
  for (const auto& i : s) {
    if (i.kind == Instr::REDUCE_GRADS) {
      EXPECT_EQ(i.micro_batch, 2);
    }
  }
  p.reduce_every_micro_batch = true;  // ZeRO 2-3
  s = data_parallel_schedule(p);
  EXPECT_EQ(count(s, Instr::REDUCE_GRADS), 9);
  // The optimizer waits for every reduction.
  EXPECT_EQ(s.back().after.size(), 9u);
}

TEST(DataParallelSchedule, ZeroThreeGathersEachComputeOneAheadAndRecomputesGatherAgain) {
  DataParallelPlan p = plan_of(3, 1);
  p.gather_params = true;
  p.recompute_full = true;
  const auto s = data_parallel_schedule(p);
  expect_dependencies_point_backwards(s);
  // 5 forwards, 3 recomputes (layers only), 5 backwards: each has its own gather.
  EXPECT_EQ(count(s, Instr::RECOMPUTE), 3);
  EXPECT_EQ(count(s, Instr::GATHER_PARAMS), 13);
  // Each compute waits for its gather; a gather is issued once the compute two places before it
  // has ended (it overlaps the compute just before it).
  std::vector<int> computes;
  std::map<int, int> gather_of;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Instr k = s[i].kind;
    if (k == Instr::FORWARD || k == Instr::RECOMPUTE || k == Instr::BACKWARD) {
      ASSERT_EQ(s[i].after.size(), 1u);
      EXPECT_EQ(s[static_cast<std::size_t>(s[i].after[0])].kind, Instr::GATHER_PARAMS);
      gather_of[static_cast<int>(computes.size())] = s[i].after[0];
      computes.push_back(static_cast<int>(i));
    }
  }
  for (const auto& [position, gather] : gather_of) {
    const auto& after = s[static_cast<std::size_t>(gather)].after;
    if (position < 2) {
      EXPECT_TRUE(after.empty());
    } else {
      ASSERT_EQ(after.size(), 1u);
      EXPECT_EQ(after[0], computes[static_cast<std::size_t>(position - 2)]);
    }
  }
}

// The trainsim reference acquires a layer once for its recompute and its backward
// (calibrate/cuda/ref_model.cpp): one gather serves both, and the next one is issued as if the pair
// were one compute (once the compute before the previous pair has ended).
TEST(DataParallelSchedule, ARecomputeAndItsBackwardCanShareOneGather) {
  DataParallelPlan p = plan_of(3, 2);
  p.gather_params = true;
  p.recompute_full = true;
  p.recompute_shares_gather = true;
  const auto s = data_parallel_schedule(p);
  expect_dependencies_point_backwards(s);
  // Per micro-batch 5 forwards and 5 backwards gather; the 3 recomputes use their backward's.
  EXPECT_EQ(count(s, Instr::RECOMPUTE), 6);
  EXPECT_EQ(count(s, Instr::GATHER_PARAMS), 20);
  std::vector<int> computes;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Instr k = s[i].kind;
    if (k == Instr::FORWARD || k == Instr::RECOMPUTE || k == Instr::BACKWARD) computes.push_back(static_cast<int>(i));
  }
  int pairs = 0;
  for (std::size_t c = 1; c < computes.size(); ++c) {
    const ScheduleItem& b = s[static_cast<std::size_t>(computes[c])];
    const ScheduleItem& r = s[static_cast<std::size_t>(computes[c - 1])];
    if (b.kind != Instr::BACKWARD || r.kind != Instr::RECOMPUTE) continue;
    ++pairs;
    ASSERT_EQ(b.after.size(), 1u);
    ASSERT_EQ(r.after.size(), 1u);
    EXPECT_EQ(b.after[0], r.after[0]);
    // The pair's gather is issued once the compute before the previous gather's computes (a pair,
    // or the head's single backward before the first pair) has ended.
    const auto& g = s[static_cast<std::size_t>(r.after[0])];
    ASSERT_EQ(g.after.size(), 1u);
    const std::size_t before_previous = s[static_cast<std::size_t>(computes[c - 2])].kind == Instr::BACKWARD &&
                                                s[static_cast<std::size_t>(computes[c - 3])].kind == Instr::RECOMPUTE
                                            ? c - 4
                                            : c - 3;
    EXPECT_EQ(g.after[0], computes[before_previous]);
  }
  EXPECT_EQ(pairs, 6);
  // Without sharing, each gathers (the DeepSpeed default).
  p.recompute_shares_gather = false;
  EXPECT_EQ(count(data_parallel_schedule(p), Instr::GATHER_PARAMS), 26);
}

TEST(DataParallelSchedule, ZeroInfinityFetchesBeforeGatheringAndOffloadsCheckpointsAndGradients) {
  DataParallelPlan p = plan_of(2, 1);
  p.fetch_params = true;
  p.gather_params = true;
  p.recompute_full = true;
  p.offload_checkpoints = true;
  p.offload_grads = true;
  const auto s = data_parallel_schedule(p);
  expect_dependencies_point_backwards(s);
  EXPECT_EQ(count(s, Instr::FETCH_PARAMS), count(s, Instr::GATHER_PARAMS));
  for (const auto& i : s) {
    if (i.kind != Instr::GATHER_PARAMS) continue;
    bool after_fetch = false;
    for (int a : i.after) after_fetch = after_fetch || s[static_cast<std::size_t>(a)].kind == Instr::FETCH_PARAMS;
    EXPECT_TRUE(after_fetch);
  }
  EXPECT_EQ(count(s, Instr::SAVE_CHECKPOINT), 2);  // transformer layers only
  EXPECT_EQ(count(s, Instr::LOAD_CHECKPOINT), 2);
  // A layer's checkpoint is back before its first recompute.
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].kind != Instr::RECOMPUTE) continue;
    bool loaded = false;
    for (std::size_t j = 0; j < i; ++j) loaded = loaded || (s[j].kind == Instr::LOAD_CHECKPOINT && s[j].layer == s[i].layer);
    EXPECT_TRUE(loaded);
  }
  EXPECT_EQ(count(s, Instr::OFFLOAD_GRADS), count(s, Instr::REDUCE_GRADS));
}

TEST(DataParallelSchedule, SelectiveRecomputeNeedsNoParameters) {
  DataParallelPlan p = plan_of(2, 1);
  p.gather_params = true;
  p.selective_unit_of_layer = 0;
  const auto s = data_parallel_schedule(p);
  EXPECT_EQ(count(s, Instr::RECOMPUTE), 2);
  for (const auto& i : s) {
    if (i.kind == Instr::RECOMPUTE) {
      EXPECT_TRUE(i.after.empty());
    }
  }
}

// FSDP2's root module (the embedding and the head, units outside the blocks) reduce-scatters once,
// after the whole backward (workloads/stacks/training_stacks.md, "FSDP2"): its units share a bucket that is
// not contiguous in unit order, and it closes at its lowest unit, the embedding, whose backward is last.
TEST(DataParallelSchedule, ABucketClosesAtItsLowestUnitsBackward) {
  DataParallelPlan p = plan_of(3, 2);  // units: embedding, 3 layers, head
  p.gather_params = true;
  p.reduce_every_micro_batch = true;
  p.bucket_of_unit = {0, 1, 2, 3, 0};
  const auto s = data_parallel_schedule(p);
  expect_dependencies_point_backwards(s);
  // Buckets 1-3 and bucket 0 once per micro-batch; bucket 0 after the embedding's backward.
  EXPECT_EQ(count(s, Instr::REDUCE_GRADS), 2 * 4);
  int bucket0 = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].kind != Instr::REDUCE_GRADS || s[i].bucket != 0) continue;
    ++bucket0;
    const ScheduleItem& after = s[static_cast<std::size_t>(s[i].after[0])];
    EXPECT_EQ(after.kind, Instr::BACKWARD);
    EXPECT_EQ(after.unit, 0);
  }
  EXPECT_EQ(bucket0, 2);
}

// A gather group (FSDP2's root: the embedding and the head) is gathered once per pass of a
// micro-batch, for its first compute there: the embedding's forward and the head's backward.
TEST(DataParallelSchedule, AGatherGroupGathersOncePerPass) {
  DataParallelPlan p = plan_of(2, 2);  // units: embedding, 2 layers, head
  p.gather_params = true;
  p.gather_group = {0, -1, -1, 0};
  const auto s = data_parallel_schedule(p);
  expect_dependencies_point_backwards(s);
  // Per micro-batch and pass: the group once and each layer: 2 x 2 x 3.
  EXPECT_EQ(count(s, Instr::GATHER_PARAMS), 12);
  std::map<std::pair<int, bool>, std::set<int>> group_gathers;  // (micro-batch, backward) -> gathers used
  for (const auto& i : s) {
    if ((i.kind != Instr::FORWARD && i.kind != Instr::BACKWARD) || (i.unit != 0 && i.unit != 3)) continue;
    ASSERT_EQ(i.after.size(), 1u);
    const ScheduleItem& g = s[static_cast<std::size_t>(i.after[0])];
    EXPECT_EQ(g.kind, Instr::GATHER_PARAMS);
    EXPECT_EQ(g.unit, i.kind == Instr::FORWARD ? 0 : 3) << "gathered for the group's first compute of the pass";
    group_gathers[{i.micro_batch, i.kind == Instr::BACKWARD}].insert(i.after[0]);
  }
  ASSERT_EQ(group_gathers.size(), 4u);
  for (const auto& [pass, gathers] : group_gathers) EXPECT_EQ(gathers.size(), 1u);
  // Without resharding after forward only the forward gathers: the group once per micro-batch.
  p.gather_for_backward = false;
  EXPECT_EQ(count(data_parallel_schedule(p), Instr::GATHER_PARAMS), 2 * 3);
}

// Two buffers and two units gathered once a step (the trainsim reference: calibrate/cuda/
// ref_param_store.cpp): 4 layers (units 1-4) over 2 micro-batches. The step starts with the end
// units' gathers; the first forward gathers units 1-4, leaving 3 and 4 in their buffers (3 % 2, 4 %
// 2) for the backward's first two; the backward gathers 2 and 1, which the next forward uses. So
// 2 + 4 + 2 + 2 + 2 = 12 gathers, and a buffer's gather waits for the last compute that used it.
TEST(DataParallelSchedule, BuffersKeepALayerForTheNextPass) {
  DataParallelPlan p = plan_of(4, 2);  // units: embedding, 4 layers, head
  p.gather_params = true;
  p.step_gathered_units = {0, 5};
  p.gather_slots = 2;
  const auto s = data_parallel_schedule(p);
  expect_dependencies_point_backwards(s);
  EXPECT_EQ(count(s, Instr::GATHER_PARAMS), 12);
  // The first two instructions gather the end units, waiting for nothing in the step.
  ASSERT_GE(s.size(), 2u);
  EXPECT_EQ(s[0].kind, Instr::GATHER_PARAMS);
  EXPECT_EQ(s[0].unit, 0);
  EXPECT_TRUE(s[0].after.empty());
  EXPECT_EQ(s[1].kind, Instr::GATHER_PARAMS);
  EXPECT_EQ(s[1].unit, 5);
  EXPECT_TRUE(s[1].after.empty());
  // Which units each pass gathers, in order.
  std::vector<std::vector<int>> passes;
  Pass last = Pass::NONE;
  int last_mb = -1;
  for (std::size_t i = 2; i < s.size(); ++i) {
    if (s[i].kind != Instr::GATHER_PARAMS) continue;
    if (s[i].pass != last || s[i].micro_batch != last_mb) passes.emplace_back();
    last = s[i].pass;
    last_mb = s[i].micro_batch;
    passes.back().push_back(s[i].unit);
  }
  EXPECT_EQ(passes, (std::vector<std::vector<int>>{{1, 2, 3, 4}, {2, 1}, {3, 4}, {2, 1}}));
  // The backward's gather of unit 2 goes into unit 4's buffer once unit 4's backward has ended.
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].kind != Instr::GATHER_PARAMS || s[i].pass != Pass::BACKWARD || s[i].unit != 2 || s[i].micro_batch != 0) continue;
    ASSERT_EQ(s[i].after.size(), 1u);
    const ScheduleItem& w = s[static_cast<std::size_t>(s[i].after[0])];
    EXPECT_EQ(w.kind, Instr::BACKWARD);
    EXPECT_EQ(w.unit, 4);
  }
  // Every compute of an end unit uses the step's first gathers.
  for (const auto& i : s) {
    if ((i.kind == Instr::FORWARD || i.kind == Instr::BACKWARD) && (i.unit == 0 || i.unit == 5)) {
      ASSERT_EQ(i.after.size(), 1u);
      EXPECT_EQ(i.after[0], i.unit == 0 ? 0 : 1);
    }
  }
}

TEST(Buckets, CloseInBackwardOrderOnceFull) {
  EXPECT_EQ(assign_buckets({1, 1, 1, 1}, 2), (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(assign_buckets({5, 1, 1}, 2), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(assign_buckets({1, 1, 1}, 100), (std::vector<int>{0, 0, 0}));
}

}  // namespace
}  // namespace trainsim::sim
