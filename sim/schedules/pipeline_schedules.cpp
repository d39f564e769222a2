// The pipeline schedules by wl::Schedule, the shape rules they share (from wl::schedule_facts),
// and the bounds each one states. The bounds are exact maxima of the generated orders, which the
// unit tests recount from the orders themselves.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

std::string_view to_string(WorkKind k) {
  switch (k) {
    case WorkKind::FORWARD: return "forward";
    case WorkKind::BACKWARD: return "backward";
    case WorkKind::OPTIMIZER_STEP: return "optimizer_step";
    case WorkKind::PROMOTE: return "promote";
    case WorkKind::DEMOTE: return "demote";
  }
  return "?";
}

namespace {

// Passes of one kind a run may hold, so that every global index fits an int and a run fits
// memory (a Work is 20 bytes; 2^26 passes of each kind is about 2.7 GB already).
constexpr std::int64_t MAX_PASSES = std::int64_t{1} << 26;

[[noreturn]] void reject(wl::Schedule schedule, const std::string& why) {
  throw std::invalid_argument(std::string(wl::to_string(schedule)) + ": " + why);
}

void require_at_least(wl::Schedule schedule, std::string_view field, int value, int least, std::string_view why = {}) {
  if (value >= least) return;
  std::string message = std::string(field) + " must be at least " + std::to_string(least) + " (got " +
                        std::to_string(value) + ")";
  if (!why.empty()) message += ": " + std::string(why);
  reject(schedule, message);
}

}  // namespace

void check_shape(wl::Schedule schedule, const PipelineShape& shape) {
  require_at_least(schedule, "stages", shape.stages, 1);
  require_at_least(schedule, "micro_batches", shape.micro_batches, 1);
  require_at_least(schedule, "chunks", shape.chunks, 1);
  require_at_least(schedule, "steps", shape.steps, 1);
  const std::int64_t passes = std::int64_t{shape.stages} * shape.micro_batches * shape.chunks * shape.steps;
  if (passes > MAX_PASSES)
    reject(schedule, "the run is too large: stages x micro_batches x chunks x steps = " + std::to_string(passes) +
                         " passes of each kind, at most " + std::to_string(MAX_PASSES));

  const wl::ScheduleFacts facts = wl::schedule_facts(schedule);
  if (facts.model_chunks) {
    require_at_least(schedule, "chunks", shape.chunks, 2,
                     "interleaving splits each stage into several model chunks (with one, use 1f1b)");
  } else if (!facts.one_device && shape.chunks != 1) {
    reject(schedule, "chunks must be 1 (got " + std::to_string(shape.chunks) +
                         "): only the interleaved schedule splits a stage into model chunks");
  }
  // Megatron-LM asserts it: chunk ids come in groups of p micro-batches (get_model_chunk_id).
  if (facts.micro_batches_in_groups_of_stages && shape.micro_batches % shape.stages != 0)
    reject(schedule, "micro_batches (" + std::to_string(shape.micro_batches) + ") must be a multiple of stages (" +
                         std::to_string(shape.stages) +
                         "): Megatron-LM's interleaved schedule runs micro-batches in groups of p per chunk");
  if (facts.one_device && shape.stages != 1)
    reject(schedule, "stages must be 1 (got " + std::to_string(shape.stages) +
                         "): Hydra's spilled execution runs a model on one device, its shards in turn");
  // A micro-batch of step t computes with the version its stage made after step t - 2; the 1F1B
  // order has run that step's last backward before the forward only when m >= p - 1. We require
  // m >= p, the simpler rule to state (it costs only the shape m = p - 1).
  if (facts.micro_batches_at_least_stages && shape.micro_batches < shape.stages)
    reject(schedule, "2BW needs at least as many micro-batches as stages (micro_batches " +
                         std::to_string(shape.micro_batches) + " < stages " + std::to_string(shape.stages) + ")");
}

std::vector<OrderedPass> one_f_one_b_order(int warmup, int count) {
  if (warmup < 0 || warmup > count)
    throw std::invalid_argument("one_f_one_b_order: warm-up " + std::to_string(warmup) + " outside 0 .. " +
                                std::to_string(count));
  std::vector<OrderedPass> order;
  order.reserve(2 * static_cast<std::size_t>(count));
  for (int i = 0; i < warmup; ++i) order.push_back({WorkKind::FORWARD, i});
  for (int i = 0; i < count - warmup; ++i) {
    order.push_back({WorkKind::FORWARD, warmup + i});
    order.push_back({WorkKind::BACKWARD, i});
  }
  for (int i = count - warmup; i < count; ++i) order.push_back({WorkKind::BACKWARD, i});
  return order;
}

const std::vector<ScheduleEntry>& pipeline_schedules() {
  using wl::Schedule;
  static const std::vector<ScheduleEntry> entries = {
      {Schedule::GPIPE, "GPipe (Huang et al. 2019): every forward of a step, then every backward in reverse, then a flush",
       gpipe_schedule},
      {Schedule::ONE_F_ONE_B,
       "1F1B / PipeDream-Flush as Megatron-LM: p - s - 1 warm-up forwards, forward/backward pairs, cool-down, flush",
       one_f_one_b_schedule},
      {Schedule::INTERLEAVED,
       "Megatron-LM's interleaved 1F1B (Narayanan et al. SC'21): v model chunks per stage, bubble divided by v",
       interleaved_schedule},
      {Schedule::PIPEDREAM,
       "PipeDream (Narayanan et al. SOSP'19): 1F1B with no flush, a weight update per micro-batch, weight stashing",
       pipedream_schedule},
      {Schedule::TWO_BW,
       "PipeDream-2BW (Narayanan et al. ICML'21): 1F1B with no flush, one update per step delayed by a step, two versions",
       two_bw_schedule},
      {Schedule::HYDRA, "Hydra (Nagrecha & Kumar 2021): one device, model shards promoted to the GPU in turn and spilled back",
       hydra_schedule},
  };
  return entries;
}

const ScheduleEntry& pipeline_schedule(wl::Schedule schedule) {
  for (const ScheduleEntry& e : pipeline_schedules()) {
    if (e.schedule == schedule) return e;
  }
  throw std::invalid_argument("no generator for pipeline schedule " + std::to_string(static_cast<int>(schedule)));
}

namespace {

// Checks the shape and the stage.
void check_stage(std::string_view what, wl::Schedule schedule, const PipelineShape& shape, int stage) {
  check_shape(schedule, shape);
  if (stage < 0 || stage >= shape.stages)
    throw std::invalid_argument(std::string(what) + ": stage " + std::to_string(stage) + " outside 0 .. " +
                                std::to_string(shape.stages - 1));
}

}  // namespace

int max_in_flight(wl::Schedule schedule, const PipelineShape& shape, int stage) {
  check_stage("max_in_flight", schedule, shape, stage);
  const int p = shape.stages;
  const int m = shape.micro_batches;
  switch (schedule) {
    case wl::Schedule::GPIPE: return m;
    // The warm-up forwards, and one more before the first backward frees one.
    case wl::Schedule::ONE_F_ONE_B: return std::min(m, p - stage);
    case wl::Schedule::INTERLEAVED: return std::min(interleaved_warmup(shape, stage) + 1, m * shape.chunks);
    // No flush: the warm-up is counted over the whole run, not a step.
    case wl::Schedule::PIPEDREAM:
    case wl::Schedule::TWO_BW: return std::min(m * shape.steps, p - stage);
    case wl::Schedule::HYDRA: return shape.chunks;  // every shard's forward of a micro-batch before its backward
  }
  return 0;
}

int max_weight_versions(wl::Schedule schedule, const PipelineShape& shape, int stage) {
  check_stage("max_weight_versions", schedule, shape, stage);
  switch (schedule) {
    case wl::Schedule::PIPEDREAM: {
      // A forward takes the newest version and stashes it for its backward: p - s versions in the
      // steady state (msr-fiddle/pipedream: num_versions = num_warmup_minibatches + 1). A run of
      // M micro-batches keeps fewer: with w = p - s - 1, the cool-down holds M - w + 1 once M > w,
      // and a run inside the warm-up holds version 0 and the one the first update makes.
      const int total = shape.micro_batches * shape.steps;
      const int p = shape.stages;
      return std::min({p - stage, total, std::max(2, total - p + stage + 2)});
    }
    // 2BW: step t computes with the version made after step t - 2 while its own update makes the
    // next: two, once a second step exists to use the older one.
    case wl::Schedule::TWO_BW: return std::min(shape.steps, 2);
    // The flushing schedules update in place once nothing computes with the old version.
    case wl::Schedule::GPIPE:
    case wl::Schedule::ONE_F_ONE_B:
    case wl::Schedule::INTERLEAVED:
    case wl::Schedule::HYDRA: return 1;
  }
  return 1;
}

}  // namespace trainsim::sim
