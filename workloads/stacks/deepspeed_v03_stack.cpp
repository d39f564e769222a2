// DeepSpeed 0.3.0 (September 2020, the release of the ZeRO-Offload tutorial, docs/_tutorials/
// zero-offload.md, commit 2dea61f28, an ancestor of tag v0.3.0 differing from it by one line of
// stage2.py): DeepSpeed's states, and the ZeRO-2 offload path of that release, where it departs
// from v0.16.5 (training_stacks.md, "DeepSpeed 0.3"). Line numbers are of tag v0.3.0.
#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void states(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum, StackStates& st) {
  deepspeed_states(s, n, zero_stage, grad_accum, st);
  st.param_coordinator = false;
  // deepspeed/runtime/zero/stage2.py:869-881, async_inplace_copy_grad_to_fp32_buffer_from_gpu:
  // at the accumulation boundary each gradient of the rank's partition is cast to fp32 on the GPU
  // (`.float()`) and copied into the pinned fp32 gradient partition: 4 bytes an element.
  st.boundary_grad_copy_bytes = 4;
  // Before that copy, per element on the reduction stream: set_norm_for_param_grad_in_gpu
  // (:838-847, .double().norm(2): read 2, write 8, read 8), _has_inf_or_nan (:1556-1563,
  // .float().sum(): read 2, write 4, read 4) and the .float() of the copy (read 2, write 4).
  st.boundary_grad_check_bytes = 18 + 10 + 6;
  // stage2.py:801-824, async_accumulate_grad_in_cpu_via_gpu (called from copy_grads_in_partition,
  // :912-916, when gradient_accumulation_steps > 1): micro-step > 0 copies the pinned fp16
  // accumulator (dtype=param.dtype) to the GPU and adds it into .grad; a micro-step that is not
  // the boundary copies .grad back into it.
  st.accumulates_grads_on_host_via_gpu = true;
  // stage2.py:683-686, average_tensor: with overlap_comm the hook starts with
  // torch.cuda.synchronize(); then copy_grads_in_partition (:912-921) runs, per parameter of the
  // partition, update_overflow_tracker_for_param_grad -> _has_inf_or_nan (:1556-1563,
  // float(x.float().sum())), a host read that waits for the reduction stream, which holds the
  // bucket's reduces and the copies before it. The host is inside autograd's hook meanwhile and
  // launches no backward kernel until the bucket is through.
  st.grad_offload_blocks_host = true;
  // stage2.py:1139-1157 (get_data_parallel_partitions: rank r holds the r-th contiguous range of
  // the flattened fp16 group, in model order) and :621-652 (a bucket fills in backward order):
  // copy_grads_in_partition runs, from reduce_ipg_grads (:950-983), only for the parameters
  // is_param_in_current_partition, so a bucket's copies are its owners' alone.
  st.copies_by_partition_owner = true;
  // csrc/adam/cpu_adam.cpp:336-557 (Adam_Optimizer::Step_8), csrc/includes/cpu_adam.h:23 (TILE =
  // 1024 * 1024 * 1024), csrc/adam/custom_cuda_kernel.cu (launch_param_update): the updated fp32
  // parameters of each tile go into one of two pinned buffers, read by a GPU kernel that casts them
  // into the fp16 partition, while the CPU goes on with the next tile (no wait between tiles).
  st.cpu_adam_tile_elems = 1024.0 * 1024.0 * 1024.0;
  st.row = "DeepSpeed 0.3";
  deepspeed_v03_zero3_states(zero_stage, st);
}

void refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  deepspeed_refusals(s, m, need);
  // Stages 0-2 as v0.3.0 (cpu_offload of the optimizer only); stage 3, with parameter offload and
  // NVMe, as v0.3.15 (deepspeed_v03_zero3.cpp).
  need(s.zero_stage == 3 || (s.offload_optimizer != OffloadTarget::NVME && s.offload_params == OffloadTarget::NONE),
       "optimizer offload none or cpu, no parameter offload below stage 3 (DeepSpeed 0.3.0's cpu_offload)", "other offload");
}

// The profiles calibrate DeepSpeed's host dispatch under "deepspeed".
std::string dispatch_key(const Strategy&) { return "deepspeed"; }

StackModel make() {
  StackModel m;
  m.kind = StackKind::DEEPSPEED_0_3;
  m.caching_allocator = true;
  m.runs_megatron_model = true;
  m.states = states;
  m.refusals = refusals;
  m.dispatch_key = dispatch_key;
  return m;
}

}  // namespace

const StackModel& deepspeed_v03_stack() {
  static const StackModel model = make();
  return model;
}

}  // namespace trainsim::wl
