#pragma once
// Pipeline schedules as pure functions: for each pipeline stage (a device), the order in which it
// runs the forward and backward passes of each (micro-batch, model chunk), and where it steps its
// optimizer. No SimGrid, no hardware, no bytes: the program builder (sim/program/) inserts the
// sends and receives between adjacent virtual stages, the tensor-parallel collectives, the
// memory effects and the costs. One file per schedule; each is registered by name below.
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
//   with; each OPTIMIZER_STEP of a stage makes the next version of that stage). Schedules that
//   flush use one version per step; PipeDream stashes one per in-flight micro-batch; 2BW keeps two.

#include <string>
#include <string_view>
#include <vector>

namespace trainsim::sim {

enum class WorkKind {
  FORWARD,
  BACKWARD,
  OPTIMIZER_STEP,  // this stage applies its accumulated gradients, making a new weight version
  PROMOTE,         // Hydra: bring a shard's parameters to the GPU (chunk = shard)
  DEMOTE,          // Hydra: send a shard's parameters (and its gradients) back to host memory
};
std::string_view to_string(WorkKind k);

struct Work {
  WorkKind kind = WorkKind::FORWARD;
  int micro_batch = -1;  // global index across steps; -1 for OPTIMIZER_STEP, PROMOTE, DEMOTE
  int chunk = 0;         // model chunk on this device (interleaved), or Hydra's shard
  int step = 0;          // the step this work belongs to
  int weight_version = 0;
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
// `stage` (forwards run whose backward has not), and weight versions alive at once on `stage`.
int max_in_flight(std::string_view schedule, const PipelineShape& shape, int stage);
int max_weight_versions(std::string_view schedule, const PipelineShape& shape, int stage);

// The registry: schedules by name ("gpipe", "1f1b", "interleaved", "pipedream", "2bw", "hydra").
struct ScheduleEntry {
  std::string_view name;
  std::string_view description;
  PipelineSchedule (*make)(const PipelineShape&);
  bool asynchronous;  // no flush: replayed over several steps, the steady-state step reported
};
const std::vector<ScheduleEntry>& pipeline_schedules();
const ScheduleEntry& pipeline_schedule(std::string_view name);  // throws std::invalid_argument listing the names

}  // namespace trainsim::sim
