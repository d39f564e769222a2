// Each schedule item of a data-parallel step made into typed instructions (data_parallel_builder.hpp).
#include <algorithm>
#include <cmath>

#include "data_parallel_builder.hpp"
#include "reference_stack.hpp"
#include "torch_kernels.hpp"

namespace trainsim::sim::detail {

using wl::OffloadTarget;
using wl::Recompute;

// A kernel the trainsim reference runs on its collective stream, in order with the collectives
// and beside the compute stream's kernels (sharing the GPU with them in the replay). Counted as
// communication, as the reference's own collective-stream timing counts it. Its bytes at the
// calibrated curve of its class, or the copy curve (CostModel::kernel_seconds).
int DataParallelBuilder::collective_stream_kernel(const char* name, const wl::MemoryKernel& k, const ScheduleItem& at,
                                                  Deps deps) {
  Instruction in = base(InstrKind::COMPUTE, Stream::COMM, Category::COMMUNICATION, name, at);
  in.seconds = c_.kernel_seconds(k);
  in.after = std::move(deps);
  return writer_.add(std::move(in));
}

std::vector<int> DataParallelBuilder::lower_step(const std::vector<ScheduleItem>& plan, const std::vector<int>& barrier) {
  std::vector<int> done(plan.size(), -1);
  // By schedule item: what a fetch or gather holds until its compute releases it (vectors, not
  // maps: a walk of the planner lowers tens of thousands of items).
  std::vector<std::pair<MemClass, double>> holds(plan.size(), {MemClass::STAGING, 0.0});
  std::vector<char> held(plan.size(), 0);
  // A gather that serves several computes (a recompute and its backward) is freed by the last.
  std::vector<std::size_t> last_user(plan.size(), plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    for (int a : plan[i].after) last_user[static_cast<std::size_t>(a)] = i;
  }
  std::vector<int> step_end;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const ScheduleItem& in = plan[i];
    Deps deps;
    for (int a : in.after) deps.push_back(done[static_cast<std::size_t>(a)]);
    if (in.after.empty()) deps = barrier;
    for (int a : in.ordered_after) deps.push_back(done[static_cast<std::size_t>(a)]);
    // Each case below moves `deps` into its first instruction: nothing reads it after the switch.
    int out = -1;
    switch (in.kind) {
      case Instr::FETCH_PARAMS: {
        const double params = gathered_params(in.unit);
        const double bytes = (s_.l2l ? params : shard(params)) * bytes_.params;
        if (s_.offload_params == OffloadTarget::NVME) {
          Instruction read = copy(Tier::STORAGE, Tier::HOST, bytes, Stream::NODE, Category::OFFLOAD_IO, "nvme_read_params", in);
          read.after = std::move(deps);
          deps = {writer_.add(std::move(read))};
        }
        // The trainsim reference copies a unit's shard from the host on its collective stream, in
        // order with the all-gathers and reduce-scatters (calibrate/cuda/ref_param_store.cpp).
        const Stream fetch_stream = stack_.shard_copies_on_collective_stream ? Stream::COMM : Stream::H2D;
        Instruction h2d = copy(Tier::HOST, Tier::GPU, bytes, fetch_stream, Category::OFFLOAD_IO, "h2d_params", in);
        h2d.memory.push_back({Tier::GPU, MemClass::STAGING, bytes, false});
        h2d.after = std::move(deps);
        out = writer_.add(std::move(h2d));
        holds[i] = {MemClass::STAGING, bytes};
        held[i] = 1;
        break;
      }
      case Instr::GATHER_PARAMS: {
        // FSDP2's root gathers all of its units at once (the schedule's gather group).
        const double bytes = gathered_params(in.unit) * gather_bytes_;
        // The fetched shard (if any) becomes part of the gathered unit.
        double staged = 0;
        for (int a : in.after) {
          if (plan[static_cast<std::size_t>(a)].kind == Instr::FETCH_PARAMS) staged = holds[static_cast<std::size_t>(a)].second;
        }
        // The trainsim reference keeps no bf16 shard: it casts the unit's fp32 master shard to
        // bf16 on its collective stream right before the all-gather (ref_param_store.cpp,
        // gather_into; a fetched shard arrives in bf16). A kernel of the GPU beside its compute.
        if (!stack_.keeps_param_shard && staged == 0) {
          const double elems = shard(gathered_params(in.unit));
          deps = {collective_stream_kernel("cast_shard", wl::reference_kernel(wl::ReferenceKernel::CAST_FP32_TO_BF16, elems, 1), in, deps)};
        }
        Instruction g = collective(CollectiveKind::ALL_GATHER, bytes, "gather_params", in);
        g.memory.push_back({Tier::GPU, MemClass::GATHERED, bytes, false});
        // FSDP2 casts each fetched fp32 shard to param_dtype and frees it before the all-gather
        // runs (training_stacks.md, "FSDP2"); ZeRO-Infinity's shard is its all-gather's input.
        if (staged > 0) g.memory.push_back({Tier::GPU, MemClass::STAGING, -staged, !fsdp_});
        g.after = std::move(deps);
        out = writer_.add(std::move(g));
        holds[i] = {MemClass::GATHERED, bytes};
        held[i] = 1;
        break;
      }
      case Instr::FORWARD:
      case Instr::RECOMPUTE:
      case Instr::BACKWARD: {
        // Parameters gathered (or fetched, without a gather) for this compute are freed at its end.
        MemEffects release;
        for (int a : in.after) {
          const Instr k = plan[static_cast<std::size_t>(a)].kind;
          const auto ai = static_cast<std::size_t>(a);
          if ((k == Instr::GATHER_PARAMS || k == Instr::FETCH_PARAMS) && held[ai] != 0 && last_user[ai] == i) {
            // A gather is freed by its last compute: FSDP2's root's forward gather by the head's
            // forward (the root's forward is the model's), its backward gather by the embedding's
            // backward (its post-backward runs after the whole backward). Without resharding
            // after forward a unit stays gathered to its backward, the root to the backward's end.
            if (keep_gathered_ && in.kind == Instr::FORWARD) {
              const int until = root_unit_[static_cast<std::size_t>(in.unit)] != 0 ? root_first_unit_ : in.unit;
              kept_[{until, in.micro_batch}].push_back({Tier::GPU, holds[ai].first, -holds[ai].second, true});
            } else {
              release.push_back({Tier::GPU, holds[ai].first, -holds[ai].second, true});
            }
          }
        }
        if (in.kind == Instr::BACKWARD) {
          // Without resharding after forward, the unit gathered for the forward is freed after
          // its backward (FSDP2 reshards after backward).
          const auto it = kept_.find({in.unit, in.micro_batch});
          if (it != kept_.end()) {
            release.insert(release.end(), it->second.begin(), it->second.end());
            kept_.erase(it);
          }
          if (stack_.grads_per_step && grads_made_.insert(in.unit).second) {
            const double params = units_[static_cast<std::size_t>(in.unit)].params;
            const double g = (stack_.shard_grads ? shard(params) : params) * bytes_.grads;
            const Tier t = s_.offload_optimizer == OffloadTarget::NONE ? Tier::GPU : Tier::HOST;
            release.push_back({t, MemClass::GRADS, g, true});
            grads_alive_[t] += g;
          }
        }
        // Autocast's cached weight casts (unit_work.hpp) go when the model's forward returns, after the head.
        if (in.kind == Instr::FORWARD && units_[static_cast<std::size_t>(in.unit)].holds_head && work_.activations.autocast_cache > 0) {
          release.push_back({Tier::GPU, MemClass::ACTIVATIONS, -work_.activations.autocast_cache * work_.transformer_layers, true});
        }
        if (transient_reduce_ && in.kind == Instr::BACKWARD) {
          const double g = units_[static_cast<std::size_t>(in.unit)].params * gather_bytes_;
          if (g > 0) release.push_back({Tier::GPU, MemClass::BUCKETS, g, true});
        }
        if (host_block_ >= 0) {
          deps.push_back(host_block_);
          host_block_ = -1;
        }
        const ComputePass pass = in.kind == Instr::FORWARD    ? ComputePass::FORWARD
                                 : in.kind == Instr::BACKWARD ? ComputePass::BACKWARD
                                                              : ComputePass::RECOMPUTE;
        const UnitCost& uc = units_[static_cast<std::size_t>(in.unit)];
        if (in.kind == Instr::RECOMPUTE && s_.partition_activations && s_.recompute == wl::Recompute::FULL && s_.tp > 1 &&
            uc.layer >= 0 && uc.layer < work_.transformer_layers && first_of_layer(units_, in.unit)) {
          // DeepSpeed's gather_partitioned_activations (deepspeed/runtime/activation_checkpointing/
          // checkpointing.py, v0.16.5): the layer's checkpoint, kept as 1/tp on each rank, is
          // all-gathered over the model-parallel group (all_gather_into_tensor, on the current
          // stream) before the layer's recompute runs.
          Instruction g = base(InstrKind::COLLECTIVE, Stream::COMPUTE, Category::COMMUNICATION, "checkpoint_gather", in);
          g.collective = CollectiveKind::ALL_GATHER;
          g.group = GroupKind::TENSOR;
          g.dtype = work_.dtype;
          g.bytes = work_.activations.stored * s_.tp;
          g.after = std::move(deps);
          deps = {writer_.add(std::move(g))};
        }
        out = emit_unit_pass(writer_, work_, in.unit, {pass, in.micro_batch, 0, step_}, deps, release);
        break;
      }
      case Instr::SAVE_CHECKPOINT:
      case Instr::LOAD_CHECKPOINT: {
        const bool save = in.kind == Instr::SAVE_CHECKPOINT;
        const double b = work_.activations.stored;
        Instruction c = copy(save ? Tier::GPU : Tier::HOST, save ? Tier::HOST : Tier::GPU, b, save ? Stream::D2H : Stream::H2D,
                             Category::OFFLOAD_IO, save ? "checkpoint_out" : "checkpoint_in", in);
        c.memory.push_back({Tier::GPU, MemClass::CHECKPOINTS, save ? -b : b, save});
        c.memory.push_back({Tier::HOST, MemClass::CHECKPOINTS, save ? b : -b, !save});
        c.after = std::move(deps);
        out = writer_.add(std::move(c));
        break;
      }
      case Instr::REDUCE_GRADS: {
        const double bytes = bucket_bytes_[static_cast<std::size_t>(in.bucket)];
        // reduce_scatter off: stage 2 all-reduces (wl::ZeroBuffers::reduce_scatter).
        const bool scatter = s_.zero_stage >= 2 && !s_.l2l && (s_.zero_stage >= 3 || s_.buffers.reduce_scatter);
        // DDP's reducer writes each gradient, scaled by 1 / world size, into the bucket on the
        // compute stream before the bucket's all-reduce can start (StackStates::
        // scales_grads_into_buckets): the bucket's bytes read and written once, at the rate of an
        // elementwise pass (CostModel::kernel_seconds).
        if (stack_.scales_grads_into_buckets && !scatter && bytes > 0) {
          Instruction k = base(InstrKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, "scale_grads_into_bucket", in);
          // Inside the backward call (the reducer's hook runs in autograd's backward), whose host
          // time already holds the hooks' (host_dispatch.cpp: the micro-batch's backward is paid).
          k.pass = ComputePass::BACKWARD;
          k.seconds = c_.kernel_seconds(wl::torch_kernel("torch:mul_scalar_fp32", 2 * bytes));
          k.after = std::move(deps);
          deps = {writer_.add(std::move(k))};
        }
        // DeepSpeed ZeRO-3 reduces a bucket through reduce_scatter_coalesced, which first divides the
        // flat gradient by the world size on the reduction stream (deepspeed/runtime/comm/
        // coalesced_collectives.py: v0.6.2 line 94, v0.16.5 line 201): one pass reading and writing it.
        // Without overlap_comm DeepSpeed reduces on the compute stream, in order with the backward
        // (wl::ZeroBuffers::overlap_comm).
        const Stream reduce_stream = s_.buffers.overlap_comm ? Stream::COMM : Stream::COMPUTE;
        if (prescales_scatter_ && scatter && bytes > 0) {
          Instruction k = base(InstrKind::COMPUTE, reduce_stream, Category::COMMUNICATION, "prescale_grads", in);
          k.seconds = c_.kernel_seconds(wl::torch_kernel("torch:mul_scalar_fp32", 2 * bytes));
          k.after = std::move(deps);
          deps = {writer_.add(std::move(k))};
        }
        Instruction r = collective(scatter ? CollectiveKind::REDUCE_SCATTER : CollectiveKind::ALL_REDUCE, bytes, "reduce_grads", in);
        r.stream = reduce_stream;
        r.after = std::move(deps);
        if (transient_reduce_) {
          double unsharded = 0;
          for (std::size_t u = 0; u < units_.size(); ++u) {
            if (bucket_of_unit_[u] == in.bucket) unsharded += units_[u].params * gather_bytes_;
          }
          if (unsharded > 0) r.memory.push_back({Tier::GPU, MemClass::BUCKETS, -unsharded, false});
          if (reduce_input_alive_ > 0) r.memory.push_back({Tier::GPU, MemClass::BUCKETS, -reduce_input_alive_, false});
          r.memory.push_back({Tier::GPU, MemClass::BUCKETS, bytes, false});
          reduce_input_alive_ = bytes;
          // The first unit's reduce-scatter is the backward's last: the root's final callback
          // waits for it and drops its input.
          if (in.bucket == bucket_of_unit_.front()) {
            r.memory.push_back({Tier::GPU, MemClass::BUCKETS, -bytes, true});
            reduce_input_alive_ = 0;
          }
        }
        out = writer_.add(std::move(r));
        // The reference adds each scattered fp32 shard into its gradient shard on the collective
        // stream (ref_param_store.cpp, grads_done): read both, write one.
        if (stack_.accumulates_grad_shard_on_gpu && scatter) {
          const double elems = shard(bytes / stack_.wire_grad);
          out = collective_stream_kernel("accumulate_grad_shard", wl::reference_kernel(wl::ReferenceKernel::ADD_INPLACE_FP32, elems, 1), in, {out});
        }
        break;
      }
      case Instr::OFFLOAD_GRADS: {
        if (stack_.blocking_pageable_grad_offload && s_.offload_optimizer == OffloadTarget::CPU && !s_.l2l) {
          out = lower_torch_grad_offload(in, deps);
          break;
        }
        if (stack_.boundary_grad_copy_bytes > 0 && s_.offload_optimizer == OffloadTarget::CPU && !s_.l2l) {
          out = lower_ds03_grad_offload(in, std::move(deps));
          break;
        }
        const double bucket = bucket_bytes_[static_cast<std::size_t>(in.bucket)];
        // Each rank moves its shard; L2L's ranks of a node share the node's one copy.
        const double bytes = s_.l2l ? bucket / ranks_per_node_ : std::ceil(bucket / s_.dp);
        // The reference copies it on its collective stream, in order with the collectives (grads_done).
        const Stream d2h_stream = stack_.shard_copies_on_collective_stream ? Stream::COMM : Stream::D2H;
        Instruction d2h = copy(Tier::GPU, Tier::HOST, bytes, d2h_stream, Category::OFFLOAD_IO, "d2h_grads", in);
        d2h.after = std::move(deps);
        out = writer_.add(std::move(d2h));
        if (s_.offload_optimizer == OffloadTarget::NVME && grads_on_storage()) {
          Instruction w = copy(Tier::HOST, Tier::STORAGE, bytes, Stream::NODE, Category::OFFLOAD_IO, "nvme_write_grads", in);
          w.after = {out};
          out = writer_.add(std::move(w));
        }
        break;
      }
      case Instr::OPTIMIZER_STEP:
        out = lower_optimizer(in, deps);
        step_end = {out};
        break;
      case Instr::UPDATE_PARAMS:
        out = lower_update(in, deps);
        step_end = {out};
        break;
    }
    // The host issues nothing more until this has ended (ScheduleItem::host_waits).
    if (in.host_waits) host_block_ = out;
    done[i] = out;
  }
  return step_end;
}

}  // namespace trainsim::sim::detail
