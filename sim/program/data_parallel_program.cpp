#include "data_parallel_program.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "activation_memory.hpp"
#include "data_parallel_builder.hpp"

namespace trainsim::sim {
namespace detail {

using wl::OffloadTarget;
using wl::Recompute;

DataParallelBuilder::DataParallelBuilder(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c,
                                         const wl::MemoryEstimate& mem, int gpus_per_node, int micro_batches)
    : m_(m), s_(s), c_(c), st_(mem.stages[0]), writer_(program_) {
  stack_ = wl::stack_states(s.stack, m.numerics, s.zero_stage, micro_batches > 0 ? micro_batches : s.micro_batches());
  bytes_ = {stack_.params, stack_.grads, stack_.optimizer};
  fsdp_ = wl::stack_model(s).fully_shard;
  // FSDP2 gathers whole layers (fully_shard per block) in its param_dtype, also without
  // resharding after forward (then once per micro-batch, kept to the backward); DeepSpeed's
  // ZeRO-3 gathers submodules in the parameters' dtype (workloads/stacks/training_stacks.md).
  gather_ = (s.zero_stage == 3 || fsdp_) && s.dp > 1 && !s.l2l;
  gather_bytes_ = fsdp_ ? wl::dtype_bytes(s.stack.param_dtype) : bytes_.params;
  keep_gathered_ = fsdp_ && s.zero_stage < 3;
  // FSDP2 has no resident gradient buckets: a unit's backward makes its unsharded gradients in
  // param_dtype, its post-backward copies them into a fresh reduce_dtype reduce-scatter input and
  // frees them, and that input lives until the next unit's post-backward (or the end of the
  // backward) (training_stacks.md, "FSDP2"; reports/validation/memory_peak/).
  transient_reduce_ = fsdp_ && s.zero_stage >= 2 && !s.l2l;
  prescales_scatter_ = stack_.param_coordinator && gather_;
  // FSDP2 and the trainsim reference gather whole layers (one all-gather per unit, the next one
  // prefetched) and reduce-scatter each unit's gradients after its backward.
  const bool whole_units = stack_.whole_unit_collectives;
  units_ = unit_costs(m, s, c, s.zero_stage == 3 && !s.l2l && !whole_units);
  std::vector<double> grad_bytes;
  for (const auto& u : units_) grad_bytes.push_back(owned_params(u) * stack_.wire_grad);
  // FSDP2's root module: its units gather, reshard and reduce-scatter as one (StackStates::
  // root_gathers_ends_as_one). Not under CPUOffloadPolicy: there the measured peaks, in the loss's
  // backward, do not show the root gathered (the 2.65 B GPT's and Llama 3 8B's offload rows would go
  // from +1.3% and -1.4% to +5.3% and +5.0%), which it is once the head's backward runs. Likely
  // the root's pre-backward gathers only once the loss's backward has made the logits' gradient
  // (training_stacks.md, "FSDP2"), after that peak; the replay's head unit runs the loss's backward
  // and the head's as one compute, so it cannot place the gather between them.
  const bool root_module = stack_.root_gathers_ends_as_one && whole_units && gather_ && s.offload_params == OffloadTarget::NONE;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const bool root = root_module && (units_[u].holds_embedding || units_[u].holds_head);
    root_unit_.push_back(root ? 1 : 0);
    if (!root) continue;
    if (root_first_unit_ < 0) root_first_unit_ = static_cast<int>(u);
    root_params_ += units_[u].params;
  }
  // FSDP2 and the reference reduce-scatter each unit's gradients on their own.
  const double bucket = whole_units                    ? 0.0
                        : s.zero_stage == 0 || s.l2l ? s.buffers.ddp_bucket_bytes
                                                     : s.buffers.reduce_bucket_elems * stack_.wire_grad;
  bucket_of_unit_ = assign_buckets(grad_bytes, bucket);
  // The root's units reduce-scatter together, after the whole backward: in the first unit's bucket.
  for (std::size_t u = 0; u < units_.size(); ++u) {
    if (root_unit_[u] != 0) bucket_of_unit_[u] = bucket_of_unit_[static_cast<std::size_t>(root_first_unit_)];
  }
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const auto k = static_cast<std::size_t>(bucket_of_unit_[u]);
    if (bucket_bytes_.size() <= k) bucket_bytes_.resize(k + 1, 0.0);
    bucket_bytes_[k] += grad_bytes[u];
  }
  work_ = unit_work(m, s, units_);
  rank_params_ = st_.params_on_rank;
  ranks_per_node_ = std::min(s.gpus, gpus_per_node);
  micro_batches_ = micro_batches > 0 ? micro_batches : static_cast<int>(s.micro_batches());
}

ProgramSet DataParallelBuilder::run(TrailingStep trailing) {
  ProgramSet out;
  out.steps = program_steps(s_.delayed_update, trailing);
  out.measured_steps = measured_steps(s_.delayed_update);
  program_.step_ends.assign(static_cast<std::size_t>(out.steps), {});
  allocate_model_states();
  const std::vector<ScheduleItem>& plan = schedule();
  // A schedule item lowers to a few instructions (a pass to its segments and tensor-parallel
  // collectives): reserving once spares the copies of a growing vector.
  program_.instructions.reserve(plan.size() * static_cast<std::size_t>(out.steps) * 4 + 16);
  std::vector<int> ends;
  for (int step = 0; step < out.steps; ++step) {
    // Without the delayed update a step starts from the parameters the previous step updated;
    // with it, from those of two steps before (Ren et al. 2021, Sec. 5.2).
    const int source = step - (s_.delayed_update ? 2 : 1);
    const std::vector<int> barrier = source >= 0 ? program_.step_ends[static_cast<std::size_t>(source)] : std::vector<int>{states_};
    step_ = step;
    program_.step_ends[static_cast<std::size_t>(step)] = lower_step(plan, barrier);
  }
  out.stages.push_back(std::move(program_));
  if (page_fault_bound_s_ > 0) {
    // Why: workloads/stacks/training_stacks.md, "FSDP2" (the probe that measured it: reports/HISTORY.md).
    out.notes.push_back(fmt::format(
        "FSDP2's accumulating gradient copies go to fresh pageable tensors, costed as the calibration measured "
        "them: resident heap pages below glibc's 32 MiB mmap threshold. Where glibc's per-thread arena gives such "
        "a copy a heap of its own, every page faults in: up to {:.1f} ms more a step at the profile's pageable-copy "
        "curve (measured so for a 0.36 B GPT at 2 ranks; MALLOC_ARENA_MAX=1 avoids it)",
        page_fault_bound_s_ * 1e3));
  }
  return out;
}

const std::vector<ScheduleItem>& DataParallelBuilder::schedule() {
  DataParallelPlan plan;
  for (const auto& u : units_) plan.unit_layer.push_back(u.layer);
  plan.checkpointed_layers = static_cast<int>(m_.layers);
  plan.micro_batches = micro_batches_;
  plan.fetch_params = s_.l2l || s_.offload_params != OffloadTarget::NONE;
  if (stack_.param_coordinator && gather_) {
    plan.gather_ahead = coordinator_prefetch_units();
    for (const auto& u : units_) plan.unit_params.push_back(u.params);
    plan.reuse_window_params = s_.buffers.max_reuse_distance_elems;
    // DeepSpeed 0.3.15 waits at each fetch for all in flight; hooks without parameters issue nothing.
    if (stack_.fetch_synchronizes_device) {
      plan.fetch_waits_in_flight = true;
    } else {
      plan.hook_before_unit = coordinator_hooks();
    }
    plan.fetch_blocks_previous_compute = stack_.nvme_reads_block_prefetch && s_.offload_params == OffloadTarget::NVME;
    plan.reduce_at_next_backward = true;
    plan.grad_offload_blocks_host = s_.offload_optimizer == OffloadTarget::CPU;
  }
  // L2L keeps the layer in use and the next one (Pudipeddi et al. 2020); ZeRO-Infinity reads
  // one unit further ahead than it gathers. FSDP2's copy of a unit's shard to the GPU is part of
  // that unit's all-gather (training_stacks.md, "FSDP2"), and so is the reference's, into the
  // buffer it gathers into (ref_param_store.cpp, gather_into): they read no further ahead.
  plan.fetch_ahead = s_.l2l ? 1 : fsdp_ || stack_.gather_slots > 0 ? plan.gather_ahead : plan.gather_ahead + 1;
  plan.gather_params = gather_;
  plan.gather_for_backward = !keep_gathered_;
  plan.recompute_full = s_.recompute == Recompute::FULL;
  plan.selective_unit_of_layer = s_.recompute == Recompute::SELECTIVE ? 0 : -1;
  plan.recompute_shares_gather = stack_.gather_serves_recompute;
  if (root_first_unit_ >= 0) {
    for (char root : root_unit_) plan.gather_group.push_back(root != 0 ? 0 : -1);
  }
  if (stack_.gathers_ends_once_per_step && (gather_ || plan.fetch_params)) {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (units_[u].holds_embedding || units_[u].holds_head) plan.step_gathered_units.push_back(static_cast<int>(u));
    }
  }
  plan.gather_slots = gather_ || plan.fetch_params ? stack_.gather_slots : 0;
  plan.offload_grads_once = stack_.accumulates_grad_shard_on_gpu;
  plan.offload_checkpoints = s_.offload_activations == wl::ActivationOffload::CPU;
  plan.checkpoint_copies_block_host = plan.offload_checkpoints && stack_.checkpoint_copies_block_host;
  plan.reduce_every_micro_batch = s_.zero_stage >= 2 && !s_.l2l;
  plan.offload_grads = s_.l2l || s_.offload_optimizer != OffloadTarget::NONE;
  plan.update_params = !s_.l2l && ((s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1) ||
                                   (s_.offload_optimizer != OffloadTarget::NONE && s_.offload_params == OffloadTarget::NONE));
  plan.bucket_of_unit = bucket_of_unit_;
  schedule_ = data_parallel_schedule(plan);
  return schedule_;
}

// How many submodules DeepSpeed's coordinator gathers ahead of the one it runs
// (deepspeed/runtime/zero/partitioned_param_coordinator.py, fetch_sub_module, v0.16.5): after
// the current submodule's fetch it walks the parameter trace, adding parameters while the numel
// in flight is below min(stage3_max_live_parameters - numel available, stage3_prefetch_bucket_size),
// so the last one added may overshoot; a budget of 0 or less prefetches nothing. Counted in a
// layer's mean submodule (the units of one transformer layer).
int DataParallelBuilder::coordinator_prefetch_units() const {
  double layer_params = 0;
  int layer_units = 0;
  for (const auto& u : units_) {
    if (u.layer < 0 || u.layer >= static_cast<int>(m_.layers)) continue;
    layer_params += u.params;
    ++layer_units;
  }
  if (layer_units == 0 || layer_params <= 0) return 1;
  const double unit = layer_params / layer_units;
  const double budget = std::min(s_.buffers.max_live_params - unit, s_.buffers.prefetch_bucket_elems);
  if (budget <= 0) return 0;
  return static_cast<int>(std::min<double>(std::ceil(budget / unit), static_cast<double>(units_.size())));
}

// Which units have a submodule without parameters of their own running before them, whose hook
// issues the prefetch the next unit's hook waits for (DataParallelPlan::hook_before_unit): every
// unit of a gather_units layer starts with one (the layer's container and norm, the attention
// core's softmax and dropout modules, the MLP's container and norm), except Megatron-LM's MLP
// output, whose input comes from the activation function called in ParallelMLP.forward
// (Megatron-DeepSpeed megatron/model/transformer.py, c79e3fb: F.gelu, bias_gelu_impl or swiglu,
// functions, no modules). A model as written (Hugging Face's) runs its activation as a module.
std::vector<char> DataParallelBuilder::coordinator_hooks() const {
  std::vector<char> hooks;
  for (const auto& u : units_) hooks.push_back(s_.stack.megatron_mpu && std::string_view(u.name) == "mlp_out" ? 0 : 1);
  return hooks;
}

double DataParallelBuilder::owned_params(const UnitCost& u) const {
  return sim::owned_params(u, m_, s_, stack_.head_gathers_tied_embedding);
}

// Model states, allocated before the first instruction unit by unit from the units' own
// parameters (ZeRO Sec. 5: 2 + 2 + K bytes per parameter, each part sharded over the data-
// parallel ranks by stage, on the tier its offload puts it), so the replay's totals are its own
// sums, not the memory model's; and the long-lived buffers the memory model sizes (buckets,
// pinned staging).
void DataParallelBuilder::allocate_model_states() {
  Instruction in;
  in.kind = InstrKind::MEMORY;
  in.name = "model_states";
  in.stream = Stream::COMPUTE;
  auto tier_of = [](OffloadTarget t) { return t == OffloadTarget::CPU ? Tier::HOST : t == OffloadTarget::NVME ? Tier::STORAGE : Tier::GPU; };
  double params = 0, grads = 0, optimizer = 0;
  for (const auto& unit : units_) {
    UnitCost u = unit;
    u.params = owned_params(unit);
    if (s_.l2l) {
      // One copy per node in host memory, each of the node's ranks holding an equal share.
      params += u.params / ranks_per_node_;
      grads += u.params / ranks_per_node_;
      optimizer += u.params / ranks_per_node_;
    } else {
      params += stack_.shard_params ? shard(u.params) : u.params;
      grads += stack_.shard_grads ? shard(u.params) : u.params;
      optimizer += stack_.shard_optimizer ? shard(u.params) : u.params;
    }
  }
  const Tier params_at = s_.l2l ? Tier::HOST : tier_of(s_.offload_params);
  // A stack that casts each unit's shard from the fp32 master per gather keeps no 16-bit shard.
  if (!stack_.keeps_param_shard && params_at == Tier::GPU) params = 0;
  // ZeRO-Offload moves the gradient partition with the optimizer states (Ren et al. 2021 Sec. 4.1).
  const Tier states_at = s_.l2l ? Tier::HOST : tier_of(s_.offload_optimizer);
  auto add = [&](Tier t, MemClass c, double bytes) {
    if (bytes > 0) in.memory.push_back({t, c, bytes, false});
  };
  add(params_at, MemClass::PARAMS, params * bytes_.params);
  // Gradients a stack frees at every step (set_to_none) appear with each unit's first backward.
  // The trainsim reference keeps its fp32 gradient copy in pinned host memory when the states
  // are on storage (training_stacks.md, "trainsim-reference").
  const Tier grads_at = states_at == Tier::STORAGE && !grads_on_storage() ? Tier::HOST : states_at;
  if (stack_.grads_per_step) {
    grads_per_step_bytes_ = grads * bytes_.grads;
  } else if (wl::gradients_accumulate_on_gpu(s_)) {
    // The 16-bit gradients of every parameter accumulate on the GPU; the optimizer's tier holds
    // its reduced partition (wl::gradients_accumulate_on_gpu, memory_model.cpp).
    add(Tier::GPU, MemClass::GRADS, grads * wl::state_bytes(m_.numerics).grads);
    add(grads_at, MemClass::GRADS, optimizer * bytes_.grads);
  } else {
    add(grads_at, MemClass::GRADS, grads * bytes_.grads);
  }
  add(states_at, MemClass::OPTIMIZER, optimizer * bytes_.optimizer);
  if (!transient_reduce_) add(Tier::GPU, MemClass::BUCKETS, st_.buffers.comm_bucket_bytes);
  add(Tier::HOST, MemClass::STAGING, st_.buffers.pinned_host_bytes);
  states_ = writer_.add(std::move(in));
}

}  // namespace detail

ProgramSet build_data_parallel_program(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                                       const wl::MemoryEstimate& memory, int gpus_per_node, int micro_batches,
                                       TrailingStep trailing) {
  return detail::DataParallelBuilder(m, s, costs, memory, gpus_per_node, micro_batches).run(trailing);
}

bool data_parallel_ranks_differ(const wl::ModelSpec& m, const wl::Strategy& s) {
  const wl::StackStates st = wl::stack_states(s.stack, m.numerics, s.zero_stage, s.micro_batches());
  return st.copies_by_partition_owner && s.dp > 1 && s.pp == 1 && s.schedule != wl::Schedule::HYDRA && !s.l2l &&
         s.offload_optimizer == wl::OffloadTarget::CPU;
}

}  // namespace trainsim::sim
