#pragma once
// The training stack as an input: which copies of which tensors a framework keeps, in which dtype,
// what it sends over the wire, and how its caching allocator rounds. The behaviours, with where
// each framework documents or implements them, are in training_stacks.md beside this file; every
// number cites its row there. Each stack's values live in its own module (stack_model.hpp).
//
// IDEALIZED is the default and keeps the seeds' accounting (ZeRO's 2 + 2 + K bytes per parameter,
// Korthikanti et al.'s activations): a stack is opt-in (`--stack`, or `stack` in the strategy).

#include <cstdint>
#include <string>
#include <string_view>

#include "model.hpp"

namespace trainsim::wl {

enum class StackKind {
  IDEALIZED,           // the papers' accounting (no framework)
  MEGATRON,            // Megatron-LM: bf16/fp16 parameters, fp32 main gradients, distributed optimizer
  DEEPSPEED,           // DeepSpeed ZeRO: 16-bit parameters, fp32 gradient partitions and optimizer
  DEEPSPEED_0_3,       // DeepSpeed 0.3: v0.3.0's ZeRO-2 offload (ZeRO-Offload), v0.3.15's ZeRO-3 (ZeRO-Infinity)
  PYTORCH,             // one GPU, torch.autocast: fp32 parameters and gradients
  PYTORCH_DDP,         // DistributedDataParallel under torch.autocast
  PYTORCH_FSDP,        // FSDP2 (fully_shard) with a MixedPrecisionPolicy
  PYTORCH_PIPELINING,  // torch.distributed.pipelining stages under torch.autocast
  TRAINSIM_REFERENCE,  // trainsim-calibrate reference (calibrate/cuda/ref_*): our own step, static arena
};
enum class TensorDtype { BF16, FP16, FP32 };

std::string_view to_string(StackKind k);
std::string_view to_string(TensorDtype d);
double dtype_bytes(TensorDtype d);

struct TrainingStack {
  StackKind kind = StackKind::IDEALIZED;
  // PyTorch DDP: .grad are views into the communication buckets (training_stacks.md, DDP).
  bool gradient_as_bucket_view = false;
  // FSDP2 MixedPrecisionPolicy: the dtype parameters are gathered in and gradients reduced in.
  TensorDtype param_dtype = TensorDtype::BF16;
  TensorDtype reduce_dtype = TensorDtype::FP32;
  // DeepSpeed given Megatron-LM's model-parallel unit (Megatron-DeepSpeed: the model from
  // --megatron-args): its tensor-parallel layers, with ZeRO over the mpu's data-parallel group.
  bool megatron_mpu = false;

  bool operator==(const TrainingStack&) const = default;

  // Whether a stack is named (the default is the papers' accounting).
  bool named() const { return kind != StackKind::IDEALIZED; }
};

// Bytes per parameter (of this rank's share) that a stack keeps, and when.
struct StackStates {
  double params = 0;      // the parameters the optimizer updates (per shard where sharded)
  double grads = 0;       // the gradients the optimizer reads
  double optimizer = 0;   // Adam moments and any master copy
  bool grads_per_step = false;  // allocated by the first backward, freed by the optimizer step (set_to_none)
  double compute_copy = 0;      // per parameter, the 16-bit copy the GEMMs read when params are fp32 (autocast):
                                // made by every forward, kept until that micro-batch's backward of its layer
  double bucket_copy = 0;       // per parameter, gradient buckets beside .grad (DDP)
  double wire_grad = 0;         // per parameter, bytes a gradient travels in
  bool shard_params = false, shard_grads = false, shard_optimizer = false;  // over the data-parallel ranks
  // Sharded 16-bit parameters kept on the GPU beside the master shard; false: each unit's shard is
  // cast from the fp32 master right before its all-gather (the trainsim reference).
  bool keeps_param_shard = true;
  // With the optimizer on the CPU: the reduced gradient shard of every micro-batch after the
  // step's first is copied into a fresh pageable host tensor, the host thread waiting for it, and
  // added into .grad on the CPU (FSDP2's foreach_reduce); the first micro-batch's copy is an
  // asynchronous one into pinned memory.
  bool blocking_pageable_grad_offload = false;
  // Optimizer states on storage, streamed through host memory chunk by chunk: parameters per chunk
  // (0: the strategy's sub_group_size, DeepSpeed's sub-groups), and whether the stream runs in lock
  // step (read chunk c + 1 while CPU-Adam updates chunk c, then write chunk c back, and wait for that
  // read and that write before chunk c + 1) rather than DeepSpeed's chain, where reads run ahead of
  // the updates and writes.
  // `storage_whole_chunks`: every transfer moves a whole chunk, the last one too (its file is laid
  // out in whole chunks).
  double storage_chunk_elems = 0;
  bool storage_lockstep = false;
  bool storage_whole_chunks = false;
  // How its ZeRO step is scheduled where it departs from DeepSpeed's (training_stacks.md):
  // one all-gather and one reduce-scatter per layer unit, and no gradient buckets (FSDP2, the
  // trainsim reference);
  bool whole_unit_collectives = false;
  // a unit gathered for its recompute is kept for its backward: one gather serves both;
  bool gather_serves_recompute = false;
  // shard copies between host and GPU run on the collective stream, in order with the collectives;
  bool shard_copies_on_collective_stream = false;
  // every micro-batch's scattered gradient shard is added into a GPU gradient shard (a kernel on
  // the collective stream), and that shard goes to the host once, after the step's last micro-batch;
  bool accumulates_grad_shard_on_gpu = false;
  // with the optimizer states on storage, the gradients stay in pinned host memory: only master
  // weights and moments stream through storage (ZeRO-Infinity writes gradients there too);
  bool grads_stay_on_host = false;
  // DDP's reducer scales each gradient by 1 / world size into its bucket before the bucket's
  // all-reduce (at::mul_out into the bucket view; div_ in place when .grad is already one): one
  // elementwise kernel a parameter on the compute stream, reading and writing the gradient's
  // bytes, in the micro-batch that synchronizes (training_stacks.md, "DDP");
  bool scales_grads_into_buckets = false;
  // ZeRO-3's head unit gathers the word embedding tied to it (unit_costs.hpp); false where the
  // units are whole layers and the head's has none.
  bool head_gathers_tied_embedding = true;
  // FSDP2's root module (fully_shard applied to the model last) gathers the parameters no block's
  // fully_shard holds, the embedding, the final norm and the head, as one unit: one all-gather
  // before the model's forward and, resharded after it, one when the head's backward starts; one
  // reduce-scatter after the whole backward (training_stacks.md, "FSDP2");
  bool root_gathers_ends_as_one = false;
  // The trainsim reference's ZeRO-3 buffers (training_stacks.md, "trainsim-reference"): the
  // embedding and the final norm gathered once a step, at its start, and kept; each layer gathered
  // into buffer unit % gather_slots, a later use while that buffer still holds it needing no
  // gather. 0: every use gathers (the papers' accounting).
  bool gathers_ends_once_per_step = false;
  int gather_slots = 0;
  // DeepSpeed's ZeRO-3 parameter coordinator: prefetch by stage3_prefetch_bucket_size within
  // stage3_max_live_parameters, and keep a submodule gathered for a reuse within
  // stage3_max_reuse_distance (training_stacks.md, "DeepSpeed"); elsewhere one unit is prefetched
  // and every use gathers (the papers' accounting).
  bool param_coordinator = false;
  // DeepSpeed 0.3's ZeRO-Offload (training_stacks.md, "DeepSpeed 0.3"). Bytes per element of the
  // reduced gradient a rank copies to the host at the step's last micro-batch (0: the wire dtype);
  double boundary_grad_copy_bytes = 0;
  // before it, per element, the bytes the GPU reads and writes checking and casting it (its norm,
  // the overflow test, the fp32 cast);
  double boundary_grad_check_bytes = 0;
  // every micro-batch but the last copies its 16-bit gradient partition into a pinned host buffer,
  // and every micro-batch but the first first copies that buffer back and adds it on the GPU;
  bool accumulates_grads_on_host_via_gpu = false;
  // the backward hook waits on the host for the bucket's reduction and copies, so the backward
  // goes on only after them;
  bool grad_offload_blocks_host = false;
  // a bucket's copies are made by the ranks whose partition (a contiguous range of the flattened
  // parameters in model order) it overlaps, each its overlap, not 1/dp of the bucket on every rank;
  bool copies_by_partition_owner = false;
  // CPU-Adam writes the updated fp32 parameters tile by tile into pinned memory that a GPU kernel
  // reads (4 bytes per parameter over PCIe) while the CPU updates the next tile: elements per tile
  // (0: the 16-bit partition is copied after the step).
  double cpu_adam_tile_elems = 0;
  // DeepSpeed 0.3.15's ZeRO-3 (training_stacks.md, "DeepSpeed 0.3", ZeRO-3): each submodule's fetch
  // synchronizes the device and waits for every gather in flight, and only then prefetches;
  bool fetch_synchronizes_device = false;
  // a prefetch's all-gather waits on the host for its NVMe reads before the hook's compute is launched;
  bool nvme_reads_block_prefetch = false;
  // CPU checkpoints go out with `.cpu()` and come back from pageable memory, the host waiting for both.
  bool checkpoint_copies_block_host = false;
  const char* row = "";         // the row of training_stacks.md these come from
};

// `grad_accum`: micro-batches per step on one data-parallel rank; `zero_stage` as the strategy says.
StackStates stack_states(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum);

}  // namespace trainsim::wl
