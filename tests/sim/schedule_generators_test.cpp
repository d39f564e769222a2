// The pipeline schedule generators, checked the way Megatron-LM checks get_schedule_table and
// DeepSpeed its schedules, with no simulator: invariants over many shapes; an abstract executor in
// unit time against the closed-form bubbles (GPipe, Huang et al. 2019; interleaved, Narayanan et
// al. SC'21 Sec. 2.2); in-flight activations and weight versions recounted from the orders against
// the bounds each schedule states. The exact orders of small shapes and the reasons bad shapes are
// refused: schedule_orders_test.cpp.
#include "pipeline_schedule.hpp"
#include "schedule_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace trainsim::sim {
namespace {

bool flushes(Schedule schedule) { return schedule != Schedule::PIPEDREAM && schedule != Schedule::TWO_BW; }

std::vector<int> micro_batch_counts(int p) {
  std::set<int> counts = {1, 2, 3, 5, 7, p, 2 * p, 4 * p, 8 * p, 3 * p + 1};
  return {counts.begin(), counts.end()};
}

// Many shapes per schedule: p in {1,2,3,4,8,16}, m small, p, 2p, 4p, 8p and non-multiples where
// allowed, v in {2,3,4} for the interleaved schedule, N shards for Hydra, 1 to 3 steps.
std::vector<PipelineShape> shapes_of(Schedule schedule) {
  std::vector<PipelineShape> shapes;
  for (int steps : {1, 2, 3}) {
    if (schedule == Schedule::HYDRA) {
      for (int shards : {1, 2, 3, 4, 8})
        for (int m : {1, 2, 3, 5}) shapes.push_back({1, m, shards, steps});
      continue;
    }
    for (int p : {1, 2, 3, 4, 8, 16}) {
      for (int m : micro_batch_counts(p)) {
        if (schedule == Schedule::INTERLEAVED) {
          if (m % p != 0) continue;
          for (int v : {2, 3, 4}) shapes.push_back({p, m, v, steps});
        } else if (schedule != Schedule::TWO_BW || m >= p) {
          shapes.push_back({p, m, 1, steps});
        }
      }
    }
  }
  return shapes;
}

// Optimizer steps each chunk of a stage takes over the run.
int updates_per_chunk(Schedule schedule, const PipelineShape& s) {
  return schedule == Schedule::PIPEDREAM ? s.steps * s.micro_batches : s.steps;
}

// Everything a schedule promises about its own order; "" when it keeps every promise.
std::string broken_invariant(Schedule schedule, const PipelineShape& shape, const PipelineSchedule& orders) {
  const int p = shape.stages;
  const int m = shape.micro_batches;
  const int v = shape.chunks;
  const int total = m * shape.steps;
  if (static_cast<int>(orders.size()) != p) return "stage count " + std::to_string(orders.size());
  for (int s = 0; s < p; ++s) {
    const StageSchedule& order = orders[static_cast<std::size_t>(s)];
    const std::string at = "stage " + std::to_string(s) + ": ";
    auto slot = [&](const Work& w) { return static_cast<std::size_t>(w.chunk) * total + w.micro_batch; };
    std::vector<int> forward_at(static_cast<std::size_t>(v) * total, -1), backward_at(forward_at);
    std::vector<int> forward_version(forward_at.size(), -1);
    std::vector<int> made(static_cast<std::size_t>(v), 0);     // versions made of each chunk
    std::map<std::pair<int, int>, int> passes_done;            // (chunk, step) -> passes run
    int last_step = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Work& w = order[i];
      const std::string item = at + "item " + std::to_string(i) + " (" + std::string(to_string(w.kind)) + "): ";
      if (w.chunk < 0 || w.chunk >= v) return item + "chunk " + std::to_string(w.chunk);
      if (w.step < 0 || w.step >= shape.steps) return item + "step " + std::to_string(w.step);
      const int newest = made[static_cast<std::size_t>(w.chunk)];
      if (flushes(schedule)) {
        if (w.step < last_step) return item + "step goes back to " + std::to_string(w.step);
        last_step = w.step;
      }
      if (is_pass(w)) {
        if (w.micro_batch < 0 || w.micro_batch >= total) return item + "micro-batch " + std::to_string(w.micro_batch);
        if (w.step != w.micro_batch / m) return item + "step field " + std::to_string(w.step) + " for micro-batch " + std::to_string(w.micro_batch);
        if (w.weight_version < 0 || w.weight_version > newest)
          return item + "computes with version " + std::to_string(w.weight_version) + " before it exists (newest " + std::to_string(newest) + ")";
        if (flushes(schedule) && w.weight_version != w.step) return item + "a flushing schedule computes step " + std::to_string(w.step) + " with version " + std::to_string(w.weight_version);
        if (schedule == Schedule::PIPEDREAM && w.kind == WorkKind::FORWARD && w.weight_version != newest)
          return item + "a PipeDream forward takes version " + std::to_string(w.weight_version) + ", not the newest " + std::to_string(newest);
        if (schedule == Schedule::TWO_BW && w.weight_version != std::max(w.micro_batch / m - 1, 0))
          return item + "2BW micro-batch " + std::to_string(w.micro_batch) + " computes with version " + std::to_string(w.weight_version);
        const std::size_t k = slot(w);
        if (w.kind == WorkKind::FORWARD) {
          if (forward_at[k] >= 0) return item + "second forward";
          forward_at[k] = static_cast<int>(i);
          forward_version[k] = w.weight_version;
        } else {
          if (backward_at[k] >= 0) return item + "second backward";
          if (forward_at[k] < 0) return item + "backward before its forward";
          if (w.weight_version != forward_version[k]) return item + "backward computes with another version than its forward";
          backward_at[k] = static_cast<int>(i);
        }
        ++passes_done[{w.chunk, w.step}];
        continue;
      }
      if (w.micro_batch != -1) return item + "micro_batch " + std::to_string(w.micro_batch);
      if (w.kind == WorkKind::PROMOTE || w.kind == WorkKind::DEMOTE) {
        if (schedule != Schedule::HYDRA) return item + "only Hydra moves shards";
        continue;
      }
      // OPTIMIZER_STEP: makes the next version of its chunk, where the schedule says it does.
      if (w.weight_version != newest + 1) return item + "makes version " + std::to_string(w.weight_version) + " after " + std::to_string(newest);
      ++made[static_cast<std::size_t>(w.chunk)];
      const Work* before = i > 0 ? &order[i - 1] : nullptr;
      if (flushes(schedule)) {
        if (passes_done[{w.chunk, w.step}] != 2 * m) return item + "steps before every pass of its chunk and step ran";
      } else {
        if (before == nullptr || before->kind != WorkKind::BACKWARD || before->step != w.step)
          return item + "an asynchronous update must follow a backward of its step";
        if (schedule == Schedule::TWO_BW && before->micro_batch % m != m - 1) return item + "2BW updates after micro-batch " + std::to_string(before->micro_batch);
      }
    }
    for (std::size_t k = 0; k < forward_at.size(); ++k)
      if (forward_at[k] < 0 || backward_at[k] < 0)
        return at + "micro-batch " + std::to_string(k % total) + " chunk " + std::to_string(k / total) + " lacks a pass";
    for (int c = 0; c < v; ++c)
      if (made[static_cast<std::size_t>(c)] != updates_per_chunk(schedule, shape))
        return at + "chunk " + std::to_string(c) + " takes " + std::to_string(made[static_cast<std::size_t>(c)]) + " optimizer steps";
  }
  return "";
}

// The abstract executor: each stage runs its list in order; an item starts when the previous item
// of its stage has ended and its cross-stage dependency has (a forward waits for the previous
// virtual stage's forward of its micro-batch, a backward for its own forward and the next virtual
// stage's backward). Optimizer steps, promotions and demotions cost nothing; no communication.
struct Interval {
  double start = 0, end = 0;
};
struct Execution {
  bool deadlocked = false;
  double makespan = 0;
  std::vector<std::vector<Interval>> times;  // per stage, per item
};

Execution execute(const PipelineShape& shape, const PipelineSchedule& schedule, double forward_cost,
                  double backward_cost) {
  const int p = static_cast<int>(schedule.size());
  const int total = shape.micro_batches * shape.steps;
  const int virtual_stages = p * shape.chunks;
  std::vector<double> forward_end(static_cast<std::size_t>(virtual_stages) * total, -1);
  std::vector<double> backward_end(forward_end);
  auto slot = [&](int vs, int mb) { return static_cast<std::size_t>(vs) * total + mb; };
  Execution run;
  run.times.resize(static_cast<std::size_t>(p));
  std::vector<double> clock(static_cast<std::size_t>(p), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const StageSchedule& order = schedule[static_cast<std::size_t>(s)];
      auto& times = run.times[static_cast<std::size_t>(s)];
      while (times.size() < order.size()) {
        const Work& w = order[times.size()];
        const int vs = w.chunk * p + s;
        double ready = 0, cost = 0;
        if (w.kind == WorkKind::FORWARD) {
          cost = forward_cost;
          if (vs > 0) ready = forward_end[slot(vs - 1, w.micro_batch)];
        } else if (w.kind == WorkKind::BACKWARD) {
          cost = backward_cost;
          ready = forward_end[slot(vs, w.micro_batch)];
          if (vs < virtual_stages - 1) {
            const double gradient = backward_end[slot(vs + 1, w.micro_batch)];
            ready = ready < 0 || gradient < 0 ? -1 : std::max(ready, gradient);
          }
        }
        if (ready < 0) break;  // its dependency has not run yet
        const double start = std::max(clock[static_cast<std::size_t>(s)], ready);
        const double end = start + cost;
        times.push_back({start, end});
        clock[static_cast<std::size_t>(s)] = end;
        if (w.kind == WorkKind::FORWARD) forward_end[slot(vs, w.micro_batch)] = end;
        if (w.kind == WorkKind::BACKWARD) backward_end[slot(vs, w.micro_batch)] = end;
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s) {
    run.deadlocked = run.deadlocked || run.times[static_cast<std::size_t>(s)].size() < schedule[static_cast<std::size_t>(s)].size();
    run.makespan = std::max(run.makespan, clock[static_cast<std::size_t>(s)]);
  }
  return run;
}

// Idle time of a stage inside its steady state: from its first backward to the item after its
// last forward (the end of the last forward/backward pair), between consecutive passes.
double steady_state_idle(const StageSchedule& order, const std::vector<Interval>& times) {
  std::vector<std::size_t> passes;
  for (std::size_t i = 0; i < order.size(); ++i)
    if (is_pass(order[i])) passes.push_back(i);
  std::size_t first_backward = passes.size(), last_forward = 0;
  for (std::size_t j = 0; j < passes.size(); ++j) {
    if (order[passes[j]].kind == WorkKind::BACKWARD) first_backward = std::min(first_backward, j);
    if (order[passes[j]].kind == WorkKind::FORWARD) last_forward = j;
  }
  double idle = 0;
  for (std::size_t j = first_backward + 1; j < passes.size() && j <= last_forward + 1; ++j)
    idle += times[passes[j]].start - times[passes[j - 1]].end;
  return idle;
}

// Activations in flight on a stage (forwards run whose backward has not), at most.
int in_flight_peak(const StageSchedule& order) {
  int now = 0, peak = 0;
  for (const Work& w : order) {
    if (w.kind == WorkKind::FORWARD) peak = std::max(peak, ++now);
    if (w.kind == WorkKind::BACKWARD) --now;
  }
  return peak;
}

// Versions of one chunk's weights alive at once: a version lives from the update that makes it
// while it is the newest or a later pass still computes with it.
int version_peak(const StageSchedule& order, int chunks) {
  int peak = 1;
  for (int c = 0; c < chunks; ++c) {
    std::map<int, std::size_t> last_use;
    for (std::size_t i = 0; i < order.size(); ++i)
      if (is_pass(order[i]) && order[i].chunk == c) last_use[order[i].weight_version] = i;
    std::set<int> alive = {0};
    int newest = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i].kind == WorkKind::OPTIMIZER_STEP && order[i].chunk == c) alive.insert(newest = order[i].weight_version);
      std::erase_if(alive, [&](int version) {
        const auto it = last_use.find(version);
        return version != newest && (it == last_use.end() || it->second <= i);
      });
      peak = std::max(peak, static_cast<int>(alive.size()));
    }
  }
  return peak;
}

TEST(ScheduleGenerators, EveryScheduleKeepsItsInvariantsOverManyShapes) {
  for (Schedule schedule : SCHEDULES) {
    const auto shapes = shapes_of(schedule);
    EXPECT_GE(shapes.size(), schedule == Schedule::HYDRA ? 60u : 100u) << to_string(schedule);
    for (const PipelineShape& shape : shapes)
      EXPECT_EQ(broken_invariant(schedule, shape, pipeline_schedule(schedule).make(shape)), "") << describe(schedule, shape);
  }
}

TEST(ScheduleGenerators, TheInvariantCheckCatchesBrokenOrders) {
  const PipelineShape shape{4, 8, 1, 2};
  const PipelineSchedule good = one_f_one_b_schedule(shape);
  ASSERT_EQ(broken_invariant(Schedule::ONE_F_ONE_B, shape, good), "");
  PipelineSchedule swapped = good;  // stage 3 starts F0 B0: run the backward first
  std::swap(swapped[3][0], swapped[3][1]);
  EXPECT_NE(broken_invariant(Schedule::ONE_F_ONE_B, shape, swapped).find("backward before its forward"), std::string::npos);
  PipelineSchedule doubled = good;
  doubled[1].push_back(doubled[1].front());
  EXPECT_NE(broken_invariant(Schedule::ONE_F_ONE_B, shape, doubled), "");
  PipelineSchedule early = good;  // the first update before the step's last backward
  std::rotate(early[2].begin() + 14, early[2].begin() + 16, early[2].begin() + 17);
  EXPECT_NE(broken_invariant(Schedule::ONE_F_ONE_B, shape, early), "");
}

TEST(ScheduleGenerators, NoScheduleDeadlocksTheExecutor) {
  for (Schedule schedule : SCHEDULES)
    for (const PipelineShape& shape : shapes_of(schedule))
      EXPECT_FALSE(execute(shape, pipeline_schedule(schedule).make(shape), 1, 2).deadlocked) << describe(schedule, shape);
  // The executor does report a deadlock: stage 0 waiting for a backward stage 1 runs after its own
  // forward of a micro-batch stage 0 has not yet sent.
  const PipelineShape shape{2, 2, 1, 1};
  PipelineSchedule stuck = gpipe_schedule(shape);
  stuck[0] = {{WorkKind::FORWARD, 0}, {WorkKind::BACKWARD, 0}, {WorkKind::FORWARD, 1}, {WorkKind::BACKWARD, 1}};
  stuck[1] = {{WorkKind::FORWARD, 1}, {WorkKind::FORWARD, 0}, {WorkKind::BACKWARD, 0}, {WorkKind::BACKWARD, 1}};
  EXPECT_TRUE(execute(shape, stuck, 1, 2).deadlocked);
}

// GPipe and 1F1B: a step takes (m + p - 1)(t_f + t_b), the bubble (p - 1) / (m + p - 1).
TEST(ScheduleGenerators, GPipeAnd1F1BMatchTheClosedFormBubble) {
  for (Schedule schedule : {Schedule::GPIPE, Schedule::ONE_F_ONE_B}) {
    for (const PipelineShape& shape : shapes_of(schedule)) {
      const int p = shape.stages, m = shape.micro_batches;
      const Execution run = execute(shape, pipeline_schedule(schedule).make(shape), 1, 2);
      // A flush per step: every step pays the whole bubble again.
      EXPECT_NEAR(run.makespan, shape.steps * (m + p - 1) * 3.0, 1e-9) << describe(schedule, shape);
      if (shape.steps == 1) {
        EXPECT_NEAR(1 - 3.0 * m / run.makespan, (p - 1.0) / (m + p - 1.0), 1e-9) << describe(schedule, shape);
      }
    }
  }
}

// Interleaved: per-chunk costs 1/v and 2/v; a step takes (m + (p - 1)/v) * 3, the bubble
// ((p - 1)/v) / (m + (p - 1)/v) (Narayanan et al. SC'21 Sec. 2.2).
TEST(ScheduleGenerators, InterleavedDividesTheBubbleByTheChunkCount) {
  for (const PipelineShape& shape : shapes_of(Schedule::INTERLEAVED)) {
    const int p = shape.stages, m = shape.micro_batches, v = shape.chunks;
    const Execution run = execute(shape, interleaved_schedule(shape), 1.0 / v, 2.0 / v);
    const double bubble = (p - 1.0) / v;
    EXPECT_NEAR(run.makespan, shape.steps * (m + bubble) * 3, 1e-9) << describe(Schedule::INTERLEAVED, shape);
    if (shape.steps == 1) {
      EXPECT_NEAR(1 - 3.0 * m / run.makespan, bubble / (m + bubble), 1e-9) << describe(Schedule::INTERLEAVED, shape);
    }
  }
}

TEST(ScheduleGenerators, InFlightActivationsReachTheStatedBoundAndNeverExceedIt) {
  for (Schedule schedule : SCHEDULES) {
    for (const PipelineShape& shape : shapes_of(schedule)) {
      const PipelineSchedule orders = pipeline_schedule(schedule).make(shape);
      for (int s = 0; s < shape.stages; ++s)
        EXPECT_EQ(in_flight_peak(orders[static_cast<std::size_t>(s)]), max_in_flight(schedule, shape, s))
            << describe(schedule, shape) << " stage " << s;
    }
  }
  // The bounds the papers state, where the run is long enough to reach them.
  const PipelineShape shape{8, 32, 1, 2};
  for (int s = 0; s < 8; ++s) {
    EXPECT_EQ(max_in_flight(Schedule::GPIPE, shape, s), 32);
    EXPECT_EQ(max_in_flight(Schedule::ONE_F_ONE_B, shape, s), 8 - s);
    EXPECT_EQ(max_in_flight(Schedule::PIPEDREAM, shape, s), 8 - s);
    EXPECT_EQ(max_in_flight(Schedule::TWO_BW, shape, s), 8 - s);
    EXPECT_EQ(max_in_flight(Schedule::INTERLEAVED, {8, 32, 2, 1}, s), (8 - s - 1) * 2 + 8 + 1);
  }
  EXPECT_EQ(max_in_flight(Schedule::ONE_F_ONE_B, {8, 3, 1, 1}, 0), 3);
  EXPECT_EQ(max_in_flight(Schedule::HYDRA, {1, 4, 6, 1}, 0), 6);
}

TEST(ScheduleGenerators, WeightVersionsReachTheStatedBoundAndNeverExceedIt) {
  for (Schedule schedule : SCHEDULES) {
    for (const PipelineShape& shape : shapes_of(schedule)) {
      const PipelineSchedule orders = pipeline_schedule(schedule).make(shape);
      for (int s = 0; s < shape.stages; ++s)
        EXPECT_EQ(version_peak(orders[static_cast<std::size_t>(s)], shape.chunks), max_weight_versions(schedule, shape, s))
            << describe(schedule, shape) << " stage " << s;
    }
  }
  // PipeDream keeps p - s (stage 0 p, the last stage 1), 2BW two, the flushing schedules one.
  const PipelineShape shape{8, 32, 1, 2};
  for (int s = 0; s < 8; ++s) {
    EXPECT_EQ(max_weight_versions(Schedule::PIPEDREAM, shape, s), 8 - s);
    EXPECT_EQ(max_weight_versions(Schedule::TWO_BW, shape, s), 2);
    EXPECT_EQ(max_weight_versions(Schedule::ONE_F_ONE_B, shape, s), 1);
    EXPECT_EQ(max_weight_versions(Schedule::GPIPE, shape, s), 1);
    EXPECT_EQ(max_weight_versions(Schedule::INTERLEAVED, {8, 32, 4, 2}, s), 1);
  }
  EXPECT_EQ(max_weight_versions(Schedule::TWO_BW, {8, 32, 1, 1}, 0), 1);  // one step: the update has no reader
  EXPECT_EQ(max_weight_versions(Schedule::HYDRA, {1, 4, 6, 3}, 0), 1);
}

// No flush: the steps of PipeDream and 2BW run back to back, so the run takes
// (steps * m + p - 1)(t_f + t_b) and no stage idles between its first backward and its last
// forward; the flushing 1F1B idles there at every step boundary.
TEST(ScheduleGenerators, PipeDreamAnd2BWKeepTheSteadyStateAcrossSteps) {
  for (Schedule schedule : {Schedule::PIPEDREAM, Schedule::TWO_BW}) {
    for (const PipelineShape& shape : shapes_of(schedule)) {
      const PipelineSchedule orders = pipeline_schedule(schedule).make(shape);
      const Execution run = execute(shape, orders, 1, 2);
      EXPECT_NEAR(run.makespan, (shape.steps * shape.micro_batches + shape.stages - 1) * 3.0, 1e-9) << describe(schedule, shape);
      for (int s = 0; s < shape.stages; ++s)
        EXPECT_NEAR(steady_state_idle(orders[static_cast<std::size_t>(s)], run.times[static_cast<std::size_t>(s)]), 0, 1e-9)
            << describe(schedule, shape) << " stage " << s;
    }
  }
  const PipelineShape shape{4, 8, 1, 2};
  const PipelineSchedule flushing = one_f_one_b_schedule(shape);
  const Execution run = execute(shape, flushing, 1, 2);
  for (int s : {1, 2}) EXPECT_GT(steady_state_idle(flushing[static_cast<std::size_t>(s)], run.times[static_cast<std::size_t>(s)]), 1) << s;
}

TEST(ScheduleGenerators, HydraComputesAShardOnlyWhilePromoted) {
  for (const PipelineShape& shape : shapes_of(Schedule::HYDRA)) {
    const StageSchedule order = hydra_schedule(shape)[0];
    std::set<int> resident;
    std::vector<int> promotions(static_cast<std::size_t>(shape.chunks), 0);
    for (const Work& w : order) {
      if (w.kind == WorkKind::PROMOTE) {
        EXPECT_TRUE(resident.insert(w.chunk).second) << describe(Schedule::HYDRA, shape) << " promotes a resident shard";
        ++promotions[static_cast<std::size_t>(w.chunk)];
      } else if (w.kind == WorkKind::DEMOTE) {
        EXPECT_EQ(resident.erase(w.chunk), 1u) << describe(Schedule::HYDRA, shape) << " demotes a shard not on the GPU";
      } else {
        EXPECT_TRUE(resident.count(w.chunk)) << describe(Schedule::HYDRA, shape) << " computes shard " << w.chunk << " off the GPU";
      }
      // The second resident shard is the builder's prefetch, not the schedule's.
      EXPECT_LE(resident.size(), 1u) << describe(Schedule::HYDRA, shape);
    }
    EXPECT_TRUE(resident.empty()) << describe(Schedule::HYDRA, shape);
    const int micro_batches = shape.micro_batches * shape.steps;
    for (int c = 0; c < shape.chunks; ++c)
      EXPECT_EQ(promotions[static_cast<std::size_t>(c)], (c == shape.chunks - 1 ? 1 : 2) * micro_batches)
          << describe(Schedule::HYDRA, shape) << " shard " << c;
  }
}

// wl::schedule_facts agrees with the orders: a schedule is asynchronous exactly where a forward or
// backward of a run of several steps computes with weights its own step did not start from.
TEST(ScheduleGenerators, AsynchronousSchedulesAreThoseWhosePassesUseAnotherStepsWeights) {
  for (Schedule schedule : SCHEDULES) {
    bool other_steps_weights = false;
    for (const PipelineShape& shape : shapes_of(schedule)) {
      if (shape.steps < 2) continue;
      for (const StageSchedule& stage : pipeline_schedule(schedule).make(shape)) {
        for (const Work& w : stage) {
          const bool pass = w.kind == WorkKind::FORWARD || w.kind == WorkKind::BACKWARD;
          if (pass && w.weight_version != w.step) other_steps_weights = true;
        }
      }
    }
    EXPECT_EQ(wl::schedule_facts(schedule).asynchronous, other_steps_weights) << wl::to_string(schedule);
  }
}

}  // namespace
}  // namespace trainsim::sim
