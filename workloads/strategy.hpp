#pragma once
// How a model is trained: parallel degrees, pipeline schedule, ZeRO stage, offload targets,
// recompute and batch shape. Values, not class hierarchies (DESIGN.md): a strategy is data that
// schedules and graph passes read.

#include <cstdint>
#include <string>

#include "model.hpp"
#include "training_stack.hpp"

namespace trainsim::wl {

// HYDRA: Hydra's spilled execution on each GPU (no pipeline): the model in `shards` kept in host
// memory and promoted one at a time (Nagrecha & Kumar 2021).
enum class Schedule { GPIPE, ONE_F_ONE_B, INTERLEAVED, PIPEDREAM, TWO_BW, HYDRA };
enum class OffloadTarget { NONE, CPU, NVME };
enum class ActivationOffload { NONE, CPU };
enum class Recompute { NONE, SELECTIVE, FULL };

std::string_view to_string(Schedule v);
std::string_view to_string(OffloadTarget v);

// What the rest of trainsim asks of a schedule, answered here only: the generators
// (sim/schedules/), their shape checks, the strategy rules (strategy_rules.cpp), the replay and the
// planner read these facts and never compare a schedule to a list of others.
struct ScheduleFacts {
  // No flush: a micro-batch's backward uses the weights its forward saw, older than the newest
  // (weight stashing: PipeDream, Narayanan et al. 2019; PipeDream-2BW, Narayanan et al. 2021). The
  // step changes the optimizer's math; it is replayed over several steps, the steady state reported.
  bool asynchronous = false;
  // Shape rules, checked on the strategy (strategy_rules.cpp) and on the generators' shapes
  // (sim/schedules/pipeline_schedules.cpp, check_shape).
  bool model_chunks = false;        // each stage split into vpp >= 2 model chunks; no other schedule splits one
  bool micro_batches_in_groups_of_stages = false;  // m a multiple of p (Megatron-LM's get_model_chunk_id)
  bool micro_batches_at_least_stages = false;      // m >= p (2BW's version made after step t - 2)
  bool one_device = false;          // one stage: Hydra spills the whole model on each GPU, shard by shard
};

constexpr ScheduleFacts schedule_facts(Schedule v) {
  switch (v) {
    case Schedule::GPIPE:
    case Schedule::ONE_F_ONE_B: return {};
    case Schedule::INTERLEAVED: return {.model_chunks = true, .micro_batches_in_groups_of_stages = true};
    case Schedule::PIPEDREAM: return {.asynchronous = true};
    case Schedule::TWO_BW: return {.asynchronous = true, .micro_batches_at_least_stages = true};
    case Schedule::HYDRA: return {.one_device = true};
  }
  return {};
}
std::string_view to_string(ActivationOffload v);
std::string_view to_string(Recompute v);

// ZeRO and DeepSpeed buffer sizes, in elements, with DeepSpeed's defaults
// (deepspeed/runtime/zero/config.py and offload_config.py).
struct ZeroBuffers {
  double reduce_bucket_elems = 5e8;           // reduce_bucket_size
  double allgather_bucket_elems = 5e8;        // allgather_bucket_size (stages 1-2)
  double offload_param_buffer_count = 5;      // offload_param.buffer_count (NVMe)
  double offload_param_buffer_elems = 1e8;    // offload_param.buffer_size (NVMe)
  double offload_optimizer_buffer_count = 4;  // offload_optimizer.buffer_count (NVMe)
  double sub_group_elems = 1e9;               // sub_group_size: optimizer step granularity
  // ZeRO-3's parameter coordinator (deepspeed/runtime/zero/config.py defaults, v0.16.5):
  double prefetch_bucket_elems = 5e7;         // stage3_prefetch_bucket_size
  double max_live_params = 1e9;               // stage3_max_live_parameters
  double max_reuse_distance_elems = 1e9;      // stage3_max_reuse_distance
  // overlap_comm: false reduces gradients on the compute stream (DeepSpeed v0.16.5:
  // zero/stage_1_and_2.py:1061-1067, zero/stage3.py:268-269). True, the replay's way, is
  // DeepSpeed's default for stage 3 (zero/config.py:351); stages 1-2 default to false there,
  // which the replay does not follow unless the key says so.
  bool overlap_comm = true;
  // reduce_scatter: false makes stage 2 all-reduce each bucket (DeepSpeed v0.16.5:
  // zero/stage_1_and_2.py:1070-1072, gradient_reduction_w_predivide's dist.all_reduce). Stage 1
  // all-reduces in the replay either way, as both of DeepSpeed's paths do by default; the replay's
  // ZeRO-3 reduce-scatters either way.
  bool reduce_scatter = true;
  // PyTorch DDP's bucket_cap_mb = 25 MB, used for plain data parallelism (ZeRO stage 0).
  double ddp_bucket_bytes = 25.0 * 1024 * 1024;
  bool operator==(const ZeroBuffers&) const = default;
};

struct Strategy {
  int gpus = 1;
  int nodes = 1;
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int vpp = 1;  // virtual pipeline stages (model chunks) per GPU; > 1 only for "interleaved"
  // Layers of the first and last pipeline stage (Megatron-LM's --decoder-first/last-pipeline-
  // num-layers); 0: not fixed (the partition balances the stages by cost).
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  int shards = 0;  // Hydra: model shards (0 unless the schedule is "hydra")
  bool sp = false;
  Schedule schedule = Schedule::ONE_F_ONE_B;
  int zero_stage = 0;
  OffloadTarget offload_params = OffloadTarget::NONE;
  OffloadTarget offload_optimizer = OffloadTarget::NONE;
  ActivationOffload offload_activations = ActivationOffload::NONE;
  Recompute recompute = Recompute::NONE;
  // DeepSpeed's activation_checkpointing.partition_activations (deepspeed/runtime/
  // activation_checkpointing/checkpointing.py, v0.16.5: partition_activations() keeps 1/mp of
  // each checkpoint on a rank, gather_partitioned_activations() all-gathers it over the model-
  // parallel group before the layer's recompute): under full recompute with tp > 1, a checkpoint
  // is kept as 1/tp per rank and gathered over the tensor-parallel group before its recompute.
  bool partition_activations = false;
  // L2L (Pudipeddi et al. 2020): one layer on the GPU at a time; model states in host memory,
  // updated there once per node.
  bool l2l = false;
  // ZeRO-Offload's one-step delayed parameter update (Ren et al. 2021, Sec. 5.2): the CPU
  // optimizer of step N overlaps the forward and backward of step N + 1.
  bool delayed_update = false;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1;
  std::int64_t seq = 0;
  ZeroBuffers buffers;
  // The framework that runs the step (opt-in; IDEALIZED keeps the seeds' accounting).
  TrainingStack stack;

  std::int64_t micro_batches() const { return global_batch / (micro_batch * dp); }  // per pipeline
  // Every field counts (strategy_identity.hpp gives the stable hash that goes with it).
  bool operator==(const Strategy&) const = default;
};

// Weight-stashing pipelines (PipeDream, Narayanan et al. 2019; PipeDream-2BW, Narayanan et al.
// 2021): each micro-batch's backward uses the weights its forward saw, with no flush.
inline bool weight_stashing_pipeline(const Strategy& s) { return s.pp > 1 && schedule_facts(s.schedule).asynchronous; }

// A step that changes the optimizer's math: it updates weights that later micro-batches or steps
// already used (the delayed parameter update of ZeRO-Offload, Ren et al. 2021 Sec. 5.2; the
// weight-stashing pipelines). Replayed over several steps with the steady state reported
// (sim/ir/program.hpp); searched only when asked for (`plan --allow-async`).
inline bool asynchronous(const Strategy& s) { return s.delayed_update || weight_stashing_pipeline(s); }

}  // namespace trainsim::wl
