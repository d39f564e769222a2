#pragma once
// The data-parallel family's schedule (plain DP, ZeRO-1/2/3, ZeRO-Offload, ZeRO-Infinity, L2L)
// as a pure function: the ordered, typed instructions one rank executes in a training step, each
// with the instructions it waits for. No SimGrid, no hardware: testable on its own.
//
// Work is cut into units: whole layers, or for ZeRO-3 the submodules DeepSpeed gathers one at a
// time (workloads' gather_units). The computes of a step form one sequence: every unit forward,
// then per layer (last to first) its recompute (units in forward order) and its backward (units
// in reverse). A compute that needs parameters off the GPU or spread over ranks gets its own
// fetch and gather, issued `ahead` computes early: when the compute `ahead` places before it
// starts, i.e. once compute P - ahead - 1 has ended (the pre-forward hooks of ZeRO-3 and
// ZeRO-Infinity's overlap-centric prefetch, Rajbhandari et al. 2021 Sec. 6.2).

#include <string_view>
#include <vector>

#include "small_vector.hpp"

namespace trainsim::sim {

enum class Instr {
  FETCH_PARAMS,     // bring this rank's parameters of a unit from CPU or NVMe to the GPU
  GATHER_PARAMS,    // ZeRO-3: all-gather the unit's parameters across data-parallel ranks
  FORWARD,
  SAVE_CHECKPOINT,  // copy a layer's input (its checkpoint) to host memory
  LOAD_CHECKPOINT,  // bring it back before the layer's recompute
  RECOMPUTE,
  BACKWARD,
  REDUCE_GRADS,     // all-reduce (ZeRO 0-1) or reduce-scatter (ZeRO 2-3) one gradient bucket
  OFFLOAD_GRADS,    // copy the reduced gradient shard of a bucket to host memory / storage
  OPTIMIZER_STEP,
  UPDATE_PARAMS,    // bring updated parameters back (H2D) and/or all-gather them (ZeRO 1-2)
};
std::string_view to_string(Instr i);

enum class Pass { FORWARD, RECOMPUTE, BACKWARD, NONE };

struct ScheduleItem {
  Instr kind = Instr::FORWARD;
  int unit = -1;
  int layer = -1;
  int micro_batch = -1;
  int bucket = -1;
  Pass pass = Pass::NONE;  // the compute a fetch or gather serves
  SmallVector<int, 3> after;  // indices of instructions this one waits for
  // Instructions it waits for without using what they hold: a gather or fetch listed here is not
  // freed at this compute's end (DeepSpeed 0.3.15's waits at a fetch).
  SmallVector<int, 2> ordered_after{};
  // The host thread waits for this instruction's end before it issues anything more: the next
  // compute starts after it.
  bool host_waits = false;
};

struct DataParallelPlan {
  std::vector<int> unit_layer;       // layer of each unit, forward order, non-decreasing
  // Layers [0, checkpointed_layers) are transformer layers: recompute and checkpoints apply to
  // them (units of layer -1, the embedding, and beyond, the head, are never recomputed).
  int checkpointed_layers = 0;
  int micro_batches = 1;
  bool fetch_params = false;         // parameters live off the GPU (ZeRO-Infinity, L2L)
  bool gather_params = false;        // ZeRO-3
  bool gather_for_backward = true;   // false: the forward's gather is kept for the backward (FSDP2 without resharding)
  int gather_ahead = 1;
  int fetch_ahead = 2;               // one more than gathered: fetch, then gather, then compute
  bool recompute_full = false;       // every unit's forward again before the layer's backward
  int selective_unit_of_layer = -1;  // selective recompute: the unit index, within its layer, that recomputes its attention core (no parameters needed); -1 for none
  // A unit's recompute and its backward use one gather, issued as one unit's would be (`ahead`
  // counts such pairs as one): the trainsim reference acquires a unit once for both
  // (calibrate/cuda/ref_model.cpp, backward; ref_param_store.cpp, acquire). Without it each gathers.
  bool recompute_shares_gather = false;
  // DeepSpeed's release rule (deepspeed/runtime/zero/partitioned_param_coordinator.py,
  // __params_to_release): after a submodule runs, its parameters stay gathered if the same
  // submodule runs again before the trace has gone through `reuse_window_params` parameters
  // (stage3_max_reuse_distance; the window is checked before each submodule it passes, so the
  // next one is always looked at). Then that later compute uses this gather. 0: off.
  // `unit_params`: the parameters of each unit, which the window counts.
  double reuse_window_params = 0;
  std::vector<double> unit_params;
  // DeepSpeed's fetch (partitioned_param_coordinator.py, fetch_sub_module: v0.6.2 line 246,
  // v0.16.5 line 343): every submodule's pre-forward and pre-backward hook makes the compute
  // stream wait for the all-gather stream, i.e. for every gather issued so far, and only then
  // issues its prefetch (the parameters the previous unit's release made room for). Where a
  // submodule without parameters of its own (a norm, a softmax, a dropout, a layer's container)
  // runs between two units, its hook issues that prefetch and the next unit's hook waits for it:
  // that unit's compute waits for every gather emitted before it. hook_before_unit[u]: such a
  // submodule runs between units u - 1 and u (forward order; the backward passes it between u and
  // u - 1); between passes or layers there always is one. Empty: a compute waits for its own gather.
  std::vector<char> hook_before_unit;
  // DeepSpeed 0.3.15's fetch (deepspeed/runtime/zero/stage3.py, fetch_sub_module, lines 390-446,
  // with _synchronize_communication, lines 521-532): a submodule with parameters gathered or in
  // flight waits for every handle in flight and synchronizes the device, and only then prefetches
  // (prefetch_next_sub_modules, lines 342-367, which issues nothing while a prefetch is in flight).
  // A compute waits for every gather emitted before its own fetch, not for the prefetch its hook
  // issues; submodules without parameters issue nothing.
  bool fetch_waits_in_flight = false;
  // DeepSpeed 0.3.15's parameter swapper: a prefetch's all-gather first waits on the host for the
  // NVMe reads of the parameters it gathers (partition_parameters.py, _all_gather and
  // _ensure_availability_of_partitioned_params, lines 553-573; partitioned_param_swapper.py,
  // synchronize_reads, lines 180-184), and that prefetch is issued before the hook's compute is
  // launched: compute p starts only once compute p + 1's fetch has ended.
  bool fetch_blocks_previous_compute = false;
  // DeepSpeed 0.3's CPU checkpointing (deepspeed/runtime/activation_checkpointing/checkpointing.py
  // at v0.3.15: `partition.cpu()`, line 470, before the layer's forward; get_full_inputs'
  // `part_i.copy_(item)` from pageable host memory, line 276, before its recompute): both copies
  // block the host. A checkpoint's save is waited for by the next compute, and its load is issued
  // after the compute before the recompute (no earlier) and waited for by it.
  bool checkpoint_copies_block_host = false;
  // Units one module gathers as one: a group id per unit (-1: a unit of its own; empty: none). In
  // each pass of a micro-batch (its forward; its recompute and backward) the group's first compute
  // gathers the whole group and the group's later computes of that pass use that gather (FSDP2's
  // root module: the embedding, the final norm and the head, training_stacks.md, "FSDP2").
  std::vector<int> gather_group;
  // Units gathered once a step, before its first compute, and kept through it; every other unit is
  // gathered into buffer unit % gather_slots, where it stays until another unit is gathered into
  // that buffer (that gather waits for the end of the last compute that used the buffer), and a
  // compute of a unit its buffer still holds needs no gather of its own (the trainsim reference's
  // end units and two layer buffers: calibrate/cuda/ref_param_store.cpp, zero_grads, acquire,
  // slot_of, release). gather_slots 0: no buffers.
  std::vector<int> step_gathered_units;
  int gather_slots = 0;
  bool offload_checkpoints = false;
  bool reduce_every_micro_batch = false;  // ZeRO 2-3 partition gradients at every micro-batch
  bool offload_grads = false;
  bool offload_grads_once = false;   // only the last micro-batch's (the trainsim reference accumulates on the GPU, then copies its shard)
  bool update_params = false;
  // DeepSpeed ZeRO-3's gradient bucket (stage3.py, reduce_independent_p_g_buckets_and_remove_grads,
  // v0.6.2 lines 1469-1491; v0.16.5 the same): a full bucket is reduced when a gradient that does
  // not fit arrives, i.e. within the next backward compute (after its kernels are issued), and the
  // last one when the backward ends (independent_gradient_partition_epilogue, lines 1390-1395,
  // which synchronizes the host with the reduction stream).
  bool reduce_at_next_backward = false;
  // With the optimizer on the CPU the host thread copies each reduced partition into the fp32
  // gradient in host memory with a blocking copy_ at the gradient accumulation boundary, the step's
  // last micro-batch (stage3.py __partition_grads, v0.6.2 lines 1690-1706; v0.16.5 line 1515): it
  // issues nothing more until that copy has ended. Earlier micro-batches accumulate into the 16-bit
  // partition in pinned host memory with non-blocking copies.
  bool grad_offload_blocks_host = false;
  std::vector<int> bucket_of_unit;   // gradient bucket of each unit; a bucket closes at its lowest unit's backward
};

std::vector<ScheduleItem> data_parallel_schedule(const DataParallelPlan& plan);

// Buckets over units in backward order: a bucket closes once it holds `bucket_bytes` or more.
std::vector<int> assign_buckets(const std::vector<double>& unit_grad_bytes, double bucket_bytes);

}  // namespace trainsim::sim
