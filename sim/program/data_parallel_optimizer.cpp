// The data-parallel step's optimizer and parameter update, and FSDP2's gradient offload
// (data_parallel_builder.hpp).
#include <algorithm>
#include <cmath>
#include <set>

#include "data_parallel_builder.hpp"
#include "grad_shard_pieces.hpp"

namespace trainsim::sim::detail {

using wl::OffloadTarget;

// FSDP2's offload of a bucket's reduced shards (training_stacks.md, "FSDP2"), tensor by tensor
// (grad_shard_pieces.hpp), the node's ranks copying at once: the step's first micro-batch into
// fresh pinned memory, asynchronously; every later one into fresh pageable memory with the host
// waiting, then `.grad += new` on the CPU, after which the host goes on (host_block_).
int DataParallelBuilder::lower_torch_grad_offload(const ScheduleItem& in, const Deps& deps) {
  std::vector<const UnitCost*> units;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    if (bucket_of_unit_[u] == in.bucket) units.push_back(&units_[u]);
  }
  const bool accumulate = in.micro_batch > 0;
  double add_s = 0;
  int out = -1;
  for (const ShardPiece& p : grad_shard_pieces(m_, units, s_.tp, s_.dp, stack_.wire_grad)) {
    Instruction d2h = copy(Tier::GPU, Tier::HOST, p.bytes * p.count, Stream::D2H, Category::OFFLOAD_IO, "d2h_grads", in);
    d2h.pageable = accumulate;
    d2h.copiers = ranks_per_node_;
    d2h.piece_bytes = p.bytes;
    d2h.after = out < 0 ? deps : Deps{out};
    out = writer_.add(std::move(d2h));
    add_s += p.count * c_.torch_grad_add_seconds(p.bytes, ranks_per_node_);
    if (accumulate && step_ == 0) page_fault_bound_s_ += p.count * c_.pageable_fault_seconds(p.bytes, ranks_per_node_);
  }
  if (!accumulate) return out;
  Instruction add = base(InstrKind::HOST_COMPUTE, Stream::HOST, Category::OFFLOAD_IO, "cpu_grad_add", in);
  add.seconds = add_s;
  add.after = {out};
  host_block_ = writer_.add(std::move(add));
  return host_block_;
}

// DeepSpeed 0.3.0's gradient path under cpu_offload (training_stacks.md, "DeepSpeed 0.3";
// workloads/stacks/deepspeed_v03_stack.cpp cites the lines), on the reduction stream in order:
// with accumulation, every micro-batch but the first brings the pinned fp16 accumulator back
// (2 bytes an element; the add on the GPU is not costed) and every one but the last copies the
// summed gradient out again (2 bytes); the last checks and casts it on the GPU (StackStates::
// boundary_grad_check_bytes, a kernel on the reduction stream) and copies it in fp32 into the
// optimizer's gradient partition (boundary_grad_copy_bytes). The host waits for all of it inside the
// backward hook, so the next compute starts after it (host_block_).
// With copies_by_partition_owner each amount is the rank's own (Instruction::by_dp_rank).
int DataParallelBuilder::lower_ds03_grad_offload(const ScheduleItem& in, Deps deps) {
  const double elems = std::ceil(bucket_bytes_[static_cast<std::size_t>(in.bucket)] / stack_.wire_grad / s_.dp);
  const bool by_owner = stack_.copies_by_partition_owner && s_.dp > 1;
  const std::vector<double>* owned = by_owner ? &owner_elems().at(static_cast<std::size_t>(in.bucket)) : nullptr;
  const bool accumulate = stack_.accumulates_grads_on_host_via_gpu && micro_batches_ > 1;
  const bool boundary = in.micro_batch == micro_batches_ - 1;
  int out = -1;
  const auto chain = [&](Instruction c) {
    if (owned != nullptr) c.by_dp_rank = per_dp_rank(*owned, c.bytes / elems);
    c.after = out < 0 ? std::move(deps) : Deps{out};
    out = writer_.add(std::move(c));
  };
  if (accumulate && in.micro_batch > 0) {
    chain(copy(Tier::HOST, Tier::GPU, elems * stack_.wire_grad, Stream::H2D, Category::OFFLOAD_IO, "h2d_accumulated_grads", in));
  }
  if (accumulate && !boundary) {
    chain(copy(Tier::GPU, Tier::HOST, elems * stack_.wire_grad, Stream::D2H, Category::OFFLOAD_IO, "d2h_accumulated_grads", in));
  }
  if (boundary) {
    if (stack_.boundary_grad_check_bytes > 0) {
      const wl::MemoryKernel checks{"grad_norm_overflow_cast", elems * stack_.boundary_grad_check_bytes};
      const int k = collective_stream_kernel("grad_norm_overflow_cast", checks, in, out < 0 ? std::move(deps) : Deps{out});
      if (owned != nullptr) writer_.at(k).by_dp_rank = per_dp_rank(*owned, writer_.at(k).seconds / elems);
      deps = {k};
      out = -1;
    }
    chain(copy(Tier::GPU, Tier::HOST, elems * stack_.boundary_grad_copy_bytes, Stream::D2H, Category::OFFLOAD_IO, "d2h_grads", in));
  }
  if (stack_.grad_offload_blocks_host) host_block_ = out;
  return out;
}

// DeepSpeed 0.3's partitions (stage2.py:1139-1157): rank r holds elements [r T / dp, (r + 1) T / dp)
// of the T flattened parameters in model order (the units' forward order); a bucket holds a
// contiguous run of units (assign_buckets, in backward order).
const std::vector<std::vector<double>>& DataParallelBuilder::owner_elems() {
  if (!owner_elems_.empty()) return owner_elems_;
  std::vector<double> lo(bucket_bytes_.size(), -1), hi(bucket_bytes_.size(), 0);
  double at = 0;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const auto k = static_cast<std::size_t>(bucket_of_unit_[u]);
    const double n = owned_params(units_[u]);
    if (lo[k] < 0) lo[k] = at;
    at += n;
    hi[k] = at;
  }
  const double part = at / s_.dp;
  owner_elems_.assign(bucket_bytes_.size(), std::vector<double>(static_cast<std::size_t>(s_.dp), 0.0));
  for (std::size_t k = 0; k < lo.size(); ++k) {
    for (int r = 0; r < s_.dp; ++r) {
      owner_elems_[k][static_cast<std::size_t>(r)] = std::max(0.0, std::min(hi[k], (r + 1) * part) - std::max(lo[k], r * part));
    }
  }
  return owner_elems_;
}

int DataParallelBuilder::per_dp_rank(const std::vector<double>& elems, double per_elem) {
  std::vector<double> amounts;
  for (double e : elems) amounts.push_back(e * per_elem);
  program_.by_dp_rank.push_back(std::move(amounts));
  return static_cast<int>(program_.by_dp_rank.size()) - 1;
}

// The rank's parameter tensors as its optimizer sees them (elements each, grouped by size): every
// tensor of the model once, 1/dp of it where ZeRO shards the optimizer (FSDP2 shards each
// parameter on its own).
std::vector<ShardPiece> DataParallelBuilder::optimizer_tensors() const {
  std::vector<const UnitCost*> one_per_layer;
  std::set<int> layers;
  for (const UnitCost& u : units_) {
    if (layers.insert(u.layer).second) one_per_layer.push_back(&u);
  }
  return grad_shard_pieces(m_, one_per_layer, s_.tp, s_.zero_stage >= 1 ? s_.dp : 1, 1.0);
}

int DataParallelBuilder::lower_optimizer(const ScheduleItem& in, Deps deps) {
  if (previous_optimizer_ >= 0) deps.push_back(previous_optimizer_);
  const double params = s_.zero_stage >= 1 ? shard(rank_params_) : rank_params_;
  int out = -1;
  if (s_.l2l) {
    // One update of the node's copy on the CPU (L2L's eager parameter server), shared equally
    // by the node's ranks.
    Instruction op = base(InstrKind::HOST_COMPUTE, Stream::NODE, Category::OPTIMIZER, "cpu_adam", in);
    op.params = rank_params_ / ranks_per_node_;
    op.after = deps;
    out = writer_.add(std::move(op));
  } else if (s_.offload_optimizer == OffloadTarget::NONE) {
    Instruction op = base(InstrKind::COMPUTE, Stream::COMPUTE, Category::OPTIMIZER, "adam", in);
    op.pass = ComputePass::OPTIMIZER;
    op.seconds = c_.gpu_optimizer_seconds(params, m_.numerics, stack_);
    op.after = deps;
    out = writer_.add(std::move(op));
  } else if (s_.offload_optimizer == OffloadTarget::CPU) {
    // ZeRO-Offload: each rank's CPU-Adam over its shard; the node's cores are shared. A PyTorch
    // stack runs torch's own CPU AdamW instead, at its calibrated rate per process with the
    // node's ranks stepping at once (training_stacks.md, "FSDP2").
    if (stack_.cpu_adam_tile_elems > 0) {
      out = lower_tiled_cpu_adam(in, params, deps);
    } else {
      Instruction op = base(InstrKind::HOST_COMPUTE, Stream::NODE, Category::OPTIMIZER, "cpu_adam", in);
      op.params = params;
      if (wl::stack_model(s_).torch_cpu_adam) op.seconds = c_.torch_cpu_adam_seconds(params, ranks_per_node_, optimizer_tensors());
      op.after = deps;
      out = writer_.add(std::move(op));
    }
  } else {
    // ZeRO-Infinity with optimizer states on NVMe: sub-groups stream through host memory: read
    // states and gradients, CPU-Adam, write the states back (and the fp16 parameters when they
    // live on NVMe too). Reads, updates and writes of successive sub-groups overlap. The chunk is
    // the stack's where it states one (StackStates::storage_chunk_elems), else sub_group_size.
    // In lock step (the trainsim reference, StorageStates::adam_step) the read of chunk k is issued
    // together with chunk k - 1's update, once chunk k - 2's write is done, and chunk k's update
    // starts once chunk k - 1's write is done; otherwise reads run ahead of updates and writes.
    const double chunk = stack_.storage_chunk_elems > 0 ? stack_.storage_chunk_elems : s_.buffers.sub_group_elems;
    int read_id = -1, cpu_id = -1, write_id = -1, older_write_id = -1;  // write_id: chunk k - 1's; older: k - 2's
    for (double left = params; left > 0; left -= chunk) {
      const double n = std::min(left, chunk);
      const double moved = stack_.storage_whole_chunks ? chunk : n;  // parameters a transfer carries
      Instruction read = copy(Tier::STORAGE, Tier::HOST, moved * (bytes_.optimizer + (grads_on_storage() ? bytes_.grads : 0.0)), Stream::NODE,
                              Category::OPTIMIZER, "nvme_read_optimizer", in);
      read.after = deps;
      if (read_id >= 0) read.after.push_back(read_id);
      if (stack_.storage_lockstep && older_write_id >= 0) read.after.push_back(older_write_id);
      read_id = writer_.add(std::move(read));
      Instruction cpu = base(InstrKind::HOST_COMPUTE, Stream::NODE, Category::OPTIMIZER, "cpu_adam", in);
      cpu.params = n;
      cpu.after = {read_id};
      if (cpu_id >= 0) cpu.after.push_back(cpu_id);
      if (stack_.storage_lockstep && write_id >= 0) cpu.after.push_back(write_id);
      cpu_id = writer_.add(std::move(cpu));
      Instruction write = copy(Tier::HOST, Tier::STORAGE,
                               moved * (bytes_.optimizer + (s_.offload_params == OffloadTarget::NVME ? bytes_.params : 0.0)),
                               Stream::NODE, Category::OPTIMIZER, "nvme_write_optimizer", in);
      write.after = {cpu_id};
      if (write_id >= 0) write.after.push_back(write_id);
      older_write_id = write_id;
      write_id = writer_.add(std::move(write));
    }
    out = write_id;
  }
  previous_optimizer_ = out;
  // zero_grad(set_to_none=True) after the step.
  for (const auto& [tier, bytes] : grads_alive_) {
    if (bytes > 0) writer_.at(out).memory.push_back({tier, MemClass::GRADS, -bytes, true});
  }
  grads_alive_.clear();
  grads_made_.clear();
  return out;
}

// DeepSpeed 0.3.0's CPU-Adam (StackStates::cpu_adam_tile_elems; csrc/adam/cpu_adam.cpp:336-557,
// Step_8): tile by tile, each tile's update on the node's CPU after the previous tile's, and a GPU
// kernel reading that tile's fp32 parameters from pinned memory (4 bytes a parameter over PCIe)
// once its update is done, after the previous tile's kernel (one stream). The CPU does not wait
// for the kernels. Returns the last kernel: the partition is on the GPU after it.
int DataParallelBuilder::lower_tiled_cpu_adam(const ScheduleItem& in, double params, const Deps& deps) {
  int cpu_id = -1, h2d_id = -1;
  for (double left = params; left > 0; left -= stack_.cpu_adam_tile_elems) {
    const double n = std::min(left, stack_.cpu_adam_tile_elems);
    Instruction cpu = base(InstrKind::HOST_COMPUTE, Stream::NODE, Category::OPTIMIZER, "cpu_adam", in);
    cpu.params = n;
    cpu.after = cpu_id < 0 ? deps : Deps{cpu_id};
    cpu_id = writer_.add(std::move(cpu));
    Instruction h2d = copy(Tier::HOST, Tier::GPU, n * 4.0, Stream::H2D, Category::OFFLOAD_IO, "h2d_updated_params", in);
    h2d.after = {cpu_id};
    if (h2d_id >= 0) h2d.after.push_back(h2d_id);
    h2d_id = writer_.add(std::move(h2d));
  }
  return h2d_id;
}

int DataParallelBuilder::lower_update(const ScheduleItem& in, Deps deps) {
  int out = deps.empty() ? -1 : deps.back();
  if (s_.offload_optimizer == OffloadTarget::CPU && stack_.cpu_adam_tile_elems > 0) {
    // The tiles' kernels brought the partition back during the step (lower_tiled_cpu_adam).
  } else if (s_.offload_optimizer != OffloadTarget::NONE) {
    // The CPU optimizer's 16-bit result goes back to the GPU.
    Instruction h2d = copy(Tier::HOST, Tier::GPU, shard(rank_params_) * bytes_.params, Stream::H2D, Category::OFFLOAD_IO,
                           "h2d_updated_params", in);
    h2d.after = deps;
    out = writer_.add(std::move(h2d));
  }
  if (s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1 && !stack_.shard_params) {
    // ZeRO 1-2 (ZeRO Sec. 5.1-5.2): every rank keeps all parameters, so it needs every updated
    // shard: an all-gather per allgather bucket. A stack that keeps the parameters sharded between
    // steps (FSDP2 at either reshard_after_forward, workloads/stacks/training_stacks.md "FSDP2") gathers
    // them in the next forward instead, unit by unit, and has no such gather.
    const double total = rank_params_ * bytes_.params;
    const double bucket = s_.buffers.allgather_bucket_elems * bytes_.params;
    Deps after{out};
    for (double left = total; left > 0; left -= bucket) {
      Instruction g = collective(CollectiveKind::ALL_GATHER, std::min(left, bucket), "gather_updated_params", in);
      g.after = after;
      out = writer_.add(std::move(g));
      after.clear();
    }
  }
  return out;
}

}  // namespace trainsim::sim::detail
