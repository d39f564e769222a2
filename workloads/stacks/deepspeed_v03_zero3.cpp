// DeepSpeed 0.3's ZeRO-3 as of v0.3.15 (2021-04-19, the ZeRO-Infinity release: its tutorial
// additions, docs/_tutorials/zero.md at commit 3c47d09ca, are in tag v0.3.15 and no earlier), and
// the CPU checkpointing of the 0.3 releases (training_stacks.md, "DeepSpeed 0.3", ZeRO-3). Line
// numbers are of tag v0.3.15.
#include "stack_modules.hpp"

namespace trainsim::wl {

void deepspeed_v03_zero3_states(int zero_stage, StackStates& st) {
  // deepspeed/runtime/activation_checkpointing/checkpointing.py (v0.3.0 lines 410 and 301, v0.3.15
  // lines 470 and 276): cpu_checkpointing copies the checkpoint out with `partition.cpu()` before
  // the layer's forward runs, and get_full_inputs copies it back with `part_i.copy_(item)` from
  // that pageable tensor before the recompute: both wait on the host.
  st.checkpoint_copies_block_host = true;
  if (zero_stage != 3) return;
  // Stage 3's own gradient path (stage3.py, partition_previous_reduced_grads, lines 2056-2159) is
  // replayed as DeepSpeed's, not as v0.3.0's stage 2 (deepspeed_v03_stack.cpp).
  st.boundary_grad_copy_bytes = 0;
  st.boundary_grad_check_bytes = 0;
  st.accumulates_grads_on_host_via_gpu = false;
  st.grad_offload_blocks_host = false;
  st.copies_by_partition_owner = false;
  st.cpu_adam_tile_elems = 0;
  // stage3.py, PartitionedParameterCoordinator: fetch_sub_module (lines 390-446) gathers the
  // submodule's parameters that are not available and, when any was gathered or in flight, calls
  // _synchronize_communication (lines 521-532: every handle waited for, comm_stream.synchronize(),
  // torch.cuda.synchronize()); prefetch_next_sub_modules (lines 342-367) then gathers up to
  // stage3_prefetch_bucket_size elements ahead, only when no handle is in flight.
  st.param_coordinator = true;
  st.fetch_synchronizes_device = true;
  // partition_parameters.py, _all_gather (lines 568-573) -> _ensure_availability_of_partitioned_params
  // (lines 553-566): parameters on NVMe are swapped in with async_op=False, or their reads in flight
  // are waited for (partitioned_param_swapper.py, synchronize_reads, lines 180-184), on the host,
  // inside the prefetch that runs before the hook's submodule is launched; the reads of the
  // parameters after those are issued then (stage3.py, _prefetch_nvme_param_partitions, lines 325-340).
  st.nvme_reads_block_prefetch = true;
}

}  // namespace trainsim::wl
