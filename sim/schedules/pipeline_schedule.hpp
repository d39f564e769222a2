#pragma once
// Pipeline schedules as pure functions: for each pipeline stage (a device), the order in which it
// runs the forward and backward passes of each (micro-batch, model chunk), and where it steps its
// optimizer. No SimGrid, no hardware, no bytes: the program builder (sim/program/) inserts the
// sends and receives between adjacent virtual stages, the tensor-parallel collectives, the
// memory effects and the costs. One file per schedule; each is registered below by its
// wl::Schedule, whose facts (asynchronous or not, shape rules) are wl::schedule_facts.
//
// Conventions shared by every schedule:
// - `stages` = p devices, `micro_batches` = m per step, `chunks` = v model chunks per device
//   (v > 1 only for the interleaved schedule). Virtual stage of (stage s, chunk c) = c * p + s;
//   the model's layers run through virtual stages 0 .. v*p - 1 in order (Megatron-LM).
// - Micro-batches are numbered globally across steps: step k holds k*m .. (k+1)*m - 1.
// - A FORWARD of (mb, virtual stage vs > 0) needs the FORWARD of (mb, vs - 1); a BACKWARD of
//   (mb, vs) needs the FORWARD of (mb, vs) and, unless vs is the last, the BACKWARD of (mb, vs + 1).
//   A schedule orders each stage's work so that these dependencies never deadlock.
// - `weight_version` names the weights a pass computes with (0 = the weights the run starts
//   with; each OPTIMIZER_STEP of a stage makes the next version of the chunk it names). Schedules
//   that flush use one version per step; PipeDream stashes one per in-flight micro-batch; 2BW
//   keeps two.
// - An OPTIMIZER_STEP updates one chunk: a stage of the interleaved schedule steps each of its v
//   chunks (chunk order) where Megatron-LM makes one optimizer call over all of them; Hydra steps
//   each shard while it is on the GPU. Its `weight_version` is the version it makes; PROMOTE and
//   DEMOTE carry the version they move.
// - Counts are in (micro-batch, chunk) passes: "in flight" counts chunk activations.

#include <string>
#include <string_view>
#include <vector>

#include "strategy.hpp"

namespace trainsim::sim {

enum class WorkKind {
  FORWARD,
  BACKWARD,
  OPTIMIZER_STEP,  // this stage applies one chunk's accumulated gradients, making its next version
  PROMOTE,         // Hydra: bring a shard's parameters to the GPU (chunk = shard)
  DEMOTE,          // Hydra: send a shard's parameters (and its gradients) back to host memory
};
std::string_view to_string(WorkKind k);

struct Work {
  WorkKind kind = WorkKind::FORWARD;
  int micro_batch = -1;  // global index across steps; -1 for OPTIMIZER_STEP, PROMOTE, DEMOTE
  int chunk = 0;         // model chunk on this device (interleaved), or Hydra's shard
  int step = 0;          // the step this work belongs to
  int weight_version = 0;  // computed with; OPTIMIZER_STEP: made; PROMOTE/DEMOTE: moved
  bool operator==(const Work&) const = default;
};

struct PipelineShape {
  int stages = 1;         // p
  int micro_batches = 1;  // m per step
  int chunks = 1;         // v
  int steps = 1;          // steps to generate (asynchronous schedules are replayed over several)
};

// The work of every stage, in the order that stage runs it: result[s] for stage s.
using StageSchedule = std::vector<Work>;
using PipelineSchedule = std::vector<StageSchedule>;

// Each throws std::invalid_argument for a shape the schedule does not support (with the reason),
// e.g. interleaving with m not a multiple of p.
PipelineSchedule gpipe_schedule(const PipelineShape& shape);        // fill, drain, flush
PipelineSchedule one_f_one_b_schedule(const PipelineShape& shape);  // PipeDream-Flush (Megatron's default)
PipelineSchedule interleaved_schedule(const PipelineShape& shape);  // Megatron-LM's interleaved 1F1B
PipelineSchedule pipedream_schedule(const PipelineShape& shape);    // asynchronous 1F1B, weight stashing
PipelineSchedule two_bw_schedule(const PipelineShape& shape);       // PipeDream-2BW: double-buffered weights
// Hydra's spilled execution on one device: `chunks` shards, each promoted before it runs and
// demoted after; stages must be 1.
PipelineSchedule hydra_schedule(const PipelineShape& shape);

// Bounds each schedule states (and the tests check over many shapes): activations in flight on
// `stage` (forwards run whose backward has not, in chunk activations), and versions of one
// chunk's weights alive at once on `stage` (a version is alive from the OPTIMIZER_STEP that makes
// it while it is the newest or a later pass of the stage still computes with it). Both are the
// maxima the generated order reaches, not just upper bounds. Throw std::invalid_argument for a
// shape the schedule rejects, or a stage outside 0 .. stages - 1.
int max_in_flight(wl::Schedule schedule, const PipelineShape& shape, int stage);
int max_weight_versions(wl::Schedule schedule, const PipelineShape& shape, int stage);

// The registry: every wl::Schedule, in the enum's order, with its generator. Whether it is
// asynchronous (replayed over several steps, the steady-state step reported) is
// wl::schedule_facts(schedule).asynchronous.
struct ScheduleEntry {
  wl::Schedule schedule;
  std::string_view description;
  PipelineSchedule (*make)(const PipelineShape&);
};
const std::vector<ScheduleEntry>& pipeline_schedules();
const ScheduleEntry& pipeline_schedule(wl::Schedule schedule);

// Building blocks the generators share.
//
// Throws std::invalid_argument, naming `schedule` and the problem, for a shape that schedule does
// not support (the rules are wl::schedule_facts, so the generators, the bounds above and the
// strategy rules agree).
void check_shape(wl::Schedule schedule, const PipelineShape& shape);

// Megatron-LM's warm-up of the interleaved schedule on `stage`, in (micro-batch, chunk) passes:
// (p - s - 1) * 2 + (v - 1) * p, at most m * v (interleaved_schedule.cpp).
int interleaved_warmup(const PipelineShape& shape, int stage);

// The 1F1B order of one stage over `count` passes numbered 0 .. count - 1: `warmup` forwards,
// then forward/backward pairs (forward warmup + i, backward i), then the remaining backwards.
// Megatron-LM's two schedules, PipeDream and 2BW differ only in the warm-up and in what a
// number means (a micro-batch, or a (micro-batch, chunk) pass of the interleaved schedule).
struct OrderedPass {
  WorkKind kind = WorkKind::FORWARD;
  int index = 0;
};
std::vector<OrderedPass> one_f_one_b_order(int warmup, int count);

}  // namespace trainsim::sim
