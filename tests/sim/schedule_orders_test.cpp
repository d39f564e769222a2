// The pipeline schedule generators' exact orders on small shapes (GPipe, 1F1B, interleaved, PipeDream
// with weight stashing, 2BW's double-buffered versions, Hydra's promote-compute-demote of shards) and
// the reasons bad shapes are refused; schedule_generators_test.cpp checks their
// invariants over many shapes.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeline_schedule.hpp"
#include "schedule_text.hpp"

namespace trainsim::sim {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

TEST(ScheduleGenerators, TwoBWComputesWithTheVersionOfTwoStepsBefore) {
  const PipelineShape shape{4, 4, 1, 3};
  const PipelineSchedule schedule = two_bw_schedule(shape);
  for (const StageSchedule& order : schedule) {
    int updates = 0;
    for (const Work& w : order) {
      if (is_pass(w)) {
        EXPECT_EQ(w.weight_version, std::max(w.micro_batch / 4 - 1, 0)) << w.micro_batch;
      }
      if (w.kind == WorkKind::OPTIMIZER_STEP) {
        EXPECT_EQ(w.weight_version, ++updates);
      }
    }
    EXPECT_EQ(updates, 3);
  }
  // p = 2, m = 2, stage 0: one warm-up forward for the whole run, an update after each step's
  // last backward, micro-batches 4 and 5 (step 2) on the version step 0 made.
  EXPECT_EQ(text_of(two_bw_schedule({2, 2, 1, 3})[0], false, true),
            "F0@0 F1@0 B0@0 F2@0 B1@0 U@1 F3@0 B2@0 F4@1 B3@0 U@2 F5@1 B4@1 B5@1 U@3");
}

TEST(ScheduleGenerators, PipeDreamStashesTheVersionOfEachForward) {
  // p = 3, stage 0: two warm-up forwards once, an update after every backward, each backward on
  // its forward's version.
  EXPECT_EQ(text_of(pipedream_schedule({3, 2, 1, 2})[0], false, true),
            "F0@0 F1@0 F2@0 B0@0 U@1 F3@1 B1@0 U@2 B2@0 U@3 B3@1 U@4");
  EXPECT_EQ(text_of(pipedream_schedule({3, 2, 1, 2})[2], false, true),
            "F0@0 B0@0 U@1 F1@1 B1@1 U@2 F2@2 B2@2 U@3 F3@3 B3@3 U@4");
}

TEST(ScheduleGenerators, OrdersOfSmallShapes) {
  for (const StageSchedule& order : gpipe_schedule({2, 3, 1, 2}))
    EXPECT_EQ(text_of(order, false), "F0 F1 F2 B2 B1 B0 U F3 F4 F5 B5 B4 B3 U");
  const PipelineSchedule one_f_one_b = one_f_one_b_schedule({4, 8, 1, 1});
  EXPECT_EQ(text_of(one_f_one_b[0], false), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 U");
  EXPECT_EQ(text_of(one_f_one_b[1], false), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7 U");
  EXPECT_EQ(text_of(one_f_one_b[3], false), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 U");
  // Megatron-LM's interleaved order, p = 4, m = 8, v = 2: warm-up 10 on stage 0, 4 on stage 3.
  const PipelineSchedule interleaved = interleaved_schedule({4, 8, 2, 1});
  EXPECT_EQ(text_of(interleaved[0], true),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 "
            "F6.1 B0.0 F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0 U.0 U.1");
  EXPECT_EQ(text_of(interleaved[3], true),
            "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 "
            "F7.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0 U.0 U.1");
  EXPECT_EQ(interleaved_warmup({4, 8, 2, 1}, 0), 10);
  EXPECT_EQ(interleaved_warmup({4, 4, 4, 1}, 0), 16);  // capped at m * v
}

std::string hydra_text(const StageSchedule& order) {
  std::string out;
  for (const Work& w : order) {
    if (!out.empty()) out += ' ';
    switch (w.kind) {
      case WorkKind::PROMOTE: out += "P"; break;
      case WorkKind::DEMOTE: out += "D"; break;
      case WorkKind::FORWARD: out += "F"; break;
      case WorkKind::BACKWARD: out += "B"; break;
      case WorkKind::OPTIMIZER_STEP: out += "U"; break;
    }
    out += std::to_string(w.chunk);
  }
  return out;
}

TEST(ScheduleGenerators, HydraPromotesComputesAndDemotesEachShardInTurn) {
  // Two micro-batches of one step: the update of each shard rides the last micro-batch's backward.
  const PipelineSchedule two = hydra_schedule({1, 2, 3, 1});
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(hydra_text(two[0]),
            "P0 F0 D0 P1 F1 D1 P2 F2 B2 D2 P1 B1 D1 P0 B0 D0 "
            "P0 F0 D0 P1 F1 D1 P2 F2 B2 U2 D2 P1 B1 U1 D1 P0 B0 U0 D0");
  EXPECT_EQ(hydra_text(hydra_schedule({1, 1, 1, 2})[0]), "P0 F0 B0 U0 D0 P0 F0 B0 U0 D0");
  // One micro-batch at a time: the second starts after the first's last backward.
  int micro_batch = 0;
  for (const Work& w : two[0]) {
    if (w.kind == WorkKind::PROMOTE || w.kind == WorkKind::DEMOTE) {
      EXPECT_EQ(w.micro_batch, -1);
    }
    if (!is_pass(w)) continue;
    EXPECT_GE(w.micro_batch, micro_batch);
    micro_batch = w.micro_batch;
  }
  EXPECT_EQ(micro_batch, 1);
}

TEST(ScheduleGenerators, BadShapesAreRefusedWithTheReason) {
  struct Case {
    Schedule schedule;
    PipelineShape shape;
    std::string reason;
  };
  std::vector<Case> cases;
  for (Schedule schedule : SCHEDULES) {
    const int p = schedule == Schedule::HYDRA ? 1 : 4;
    const int v = schedule == Schedule::INTERLEAVED ? 2 : 1;
    cases.push_back({schedule, {0, 8, v, 1}, "stages must be at least 1 (got 0)"});
    cases.push_back({schedule, {p, 0, v, 1}, "micro_batches must be at least 1 (got 0)"});
    cases.push_back({schedule, {p, -3, v, 1}, "micro_batches must be at least 1 (got -3)"});
    cases.push_back({schedule, {p, 8, 0, 1}, "chunks must be at least 1 (got 0)"});
    cases.push_back({schedule, {p, 8, v, 0}, "steps must be at least 1 (got 0)"});
    cases.push_back({schedule, {p, 1 << 20, v, 1 << 10}, "the run is too large"});
  }
  for (Schedule schedule : {Schedule::GPIPE, Schedule::ONE_F_ONE_B, Schedule::PIPEDREAM, Schedule::TWO_BW})
    cases.push_back({schedule, {4, 8, 2, 1}, "chunks must be 1 (got 2): only the interleaved schedule"});
  cases.push_back({Schedule::INTERLEAVED, {4, 8, 1, 1}, "chunks must be at least 2 (got 1)"});
  cases.push_back({Schedule::INTERLEAVED, {4, 6, 2, 1}, "micro_batches (6) must be a multiple of stages (4)"});
  cases.push_back({Schedule::TWO_BW, {4, 3, 1, 1}, "2BW needs at least as many micro-batches as stages"});
  cases.push_back({Schedule::HYDRA, {2, 4, 3, 1}, "stages must be 1 (got 2)"});
  for (const Case& c : cases) {
    const std::string prefix = std::string(wl::to_string(c.schedule)) + ": ";
    for (const std::string& message :
         {error_of([&] { pipeline_schedule(c.schedule).make(c.shape); }),
          error_of([&] { max_in_flight(c.schedule, c.shape, 0); }),
          error_of([&] { max_weight_versions(c.schedule, c.shape, 0); })}) {
      EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
      EXPECT_NE(message.find(c.reason), std::string::npos) << describe(c.schedule, c.shape) << ": " << message;
    }
  }
  EXPECT_NE(error_of([] { max_in_flight(Schedule::ONE_F_ONE_B, {4, 8, 1, 1}, 4); }).find("stage 4 outside 0 .. 3"), std::string::npos);
  EXPECT_NE(error_of([] { max_weight_versions(Schedule::ONE_F_ONE_B, {4, 8, 1, 1}, -1); }).find("stage -1 outside"), std::string::npos);
  EXPECT_NE(error_of([] { one_f_one_b_order(5, 4); }).find("warm-up 5 outside 0 .. 4"), std::string::npos);
  // The shapes just inside the rules are accepted.
  EXPECT_NO_THROW(two_bw_schedule({4, 4, 1, 1}));
  EXPECT_NO_THROW(interleaved_schedule({4, 4, 2, 1}));
  EXPECT_NO_THROW(hydra_schedule({1, 1, 1, 1}));
}

TEST(ScheduleGenerators, TheRegistryHoldsEveryScheduleWithItsGenerator) {
  std::vector<Schedule> listed;
  for (const ScheduleEntry& e : pipeline_schedules()) {
    listed.push_back(e.schedule);
    EXPECT_FALSE(e.description.empty()) << wl::to_string(e.schedule);
    EXPECT_EQ(&pipeline_schedule(e.schedule), &e);
  }
  EXPECT_EQ(listed, SCHEDULES);
  EXPECT_EQ(pipeline_schedule(Schedule::GPIPE).make, &gpipe_schedule);
  EXPECT_EQ(pipeline_schedule(Schedule::ONE_F_ONE_B).make, &one_f_one_b_schedule);
  EXPECT_EQ(pipeline_schedule(Schedule::INTERLEAVED).make, &interleaved_schedule);
  EXPECT_EQ(pipeline_schedule(Schedule::PIPEDREAM).make, &pipedream_schedule);
  EXPECT_EQ(pipeline_schedule(Schedule::TWO_BW).make, &two_bw_schedule);
  EXPECT_EQ(pipeline_schedule(Schedule::HYDRA).make, &hydra_schedule);
  EXPECT_EQ(to_string(WorkKind::FORWARD), "forward");
  EXPECT_EQ(to_string(WorkKind::BACKWARD), "backward");
  EXPECT_EQ(to_string(WorkKind::OPTIMIZER_STEP), "optimizer_step");
  EXPECT_EQ(to_string(WorkKind::PROMOTE), "promote");
  EXPECT_EQ(to_string(WorkKind::DEMOTE), "demote");
}

}  // namespace
}  // namespace trainsim::sim
