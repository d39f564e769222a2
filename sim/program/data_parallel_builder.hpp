#pragma once
// The data-parallel family's program builder (data_parallel_program.hpp), split by purpose over
// three files: data_parallel_program.cpp (what each stack keeps and sends, the model states, the
// steps), data_parallel_lowering.cpp (each schedule item of a step made into instructions) and
// data_parallel_optimizer.cpp (the optimizer step, the parameter update, FSDP2's gradient
// offload). Internal to sim/program.

#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "cost_model.hpp"
#include "data_parallel_schedule.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "program.hpp"
#include "strategy.hpp"
#include "training_stack.hpp"
#include "unit_work.hpp"

namespace trainsim::sim::detail {

class DataParallelBuilder {
 public:
  DataParallelBuilder(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c, const wl::MemoryEstimate& mem,
                      int gpus_per_node, int micro_batches);

  ProgramSet run(TrailingStep trailing);

 private:
  const std::vector<ScheduleItem>& schedule();

  double shard(double elems) const { return std::ceil(elems / s_.dp); }
  // The parameters a unit owns: its own, less a tied embedding its head only gathers.
  int coordinator_prefetch_units() const;
  std::vector<char> coordinator_hooks() const;
  double owned_params(const UnitCost& u) const;

  // Model states, allocated before the first instruction unit by unit from the units' own
  // parameters (ZeRO Sec. 5: 2 + 2 + K bytes per parameter, each part sharded over the data-
  // parallel ranks by stage, on the tier its offload puts it), so the replay's totals are its own
  // sums, not the memory model's; and the long-lived buffers the memory model sizes (buckets,
  // pinned staging).
  void allocate_model_states();

  // ZeRO-Infinity writes each gradient partition to the optimizer's storage tier and reads it back
  // with the states (Rajbhandari et al. 2021, Sec. 5); the trainsim reference keeps its fp32
  // gradient copy in pinned host memory and streams only master weights and moments through
  // storage (training_stacks.md, "trainsim-reference"; calibrate/reference/storage_states.cpp).
  bool grads_on_storage() const { return !stack_.grads_stay_on_host; }

  Instruction base(InstrKind kind, Stream stream, Category cat, const char* name, const ScheduleItem& from) const {
    Instruction in;
    in.kind = kind;
    in.stream = stream;
    in.category = cat;
    in.name = name;
    in.layer = from.layer;
    in.micro_batch = from.micro_batch;
    in.step = step_;
    return in;
  }

  Instruction copy(Tier from, Tier to, double bytes, Stream stream, Category cat, const char* name,
                   const ScheduleItem& at) const {
    Instruction in = base(InstrKind::COPY, stream, cat, name, at);
    in.from = from;
    in.to = to;
    in.bytes = bytes;
    return in;
  }

  Instruction collective(CollectiveKind kind, double bytes, const char* name, const ScheduleItem& at) const {
    Instruction in = base(InstrKind::COLLECTIVE, Stream::COMM, Category::COMMUNICATION, name, at);
    in.collective = kind;
    in.group = GroupKind::DATA;
    in.bytes = bytes;
    in.dtype = work_.dtype;
    return in;
  }

  // A kernel the trainsim reference runs on its collective stream, in order with the collectives
  // and beside the compute stream's kernels (sharing the GPU with them in the replay). Counted as
  // communication, as the reference's own collective-stream timing counts it. Its bytes at the
  // calibrated curve of its class, or the copy curve (CostModel::kernel_seconds).
  int collective_stream_kernel(const char* name, const wl::MemoryKernel& k, const ScheduleItem& at, Deps deps);

  // One step of the schedule made into instructions, after `barrier` (data_parallel_lowering.cpp).
  std::vector<int> lower_step(const std::vector<ScheduleItem>& plan, const std::vector<int>& barrier);

  // FSDP2's offload of a bucket's reduced shards (training_stacks.md, "FSDP2"), tensor by tensor
  // (grad_shard_pieces.hpp), the node's ranks copying at once: the step's first micro-batch into
  // fresh pinned memory, asynchronously; every later one into fresh pageable memory with the host
  // waiting, then `.grad += new` on the CPU, after which the host goes on (host_block_).
  int lower_torch_grad_offload(const ScheduleItem& in, const Deps& deps);

  // DeepSpeed 0.3's copies of a bucket's gradient partition to the host (StackStates::
  // boundary_grad_copy_bytes, accumulates_grads_on_host_via_gpu, grad_offload_blocks_host).
  int lower_ds03_grad_offload(const ScheduleItem& in, Deps deps);
  // Per bucket, the elements of it in each data-parallel rank's partition (StackStates::
  // copies_by_partition_owner); and an amount per rank registered in the program.
  const std::vector<std::vector<double>>& owner_elems();
  int per_dp_rank(const std::vector<double>& elems, double per_elem);
  std::vector<std::vector<double>> owner_elems_;

  // The optimizer step and the parameter update (data_parallel_optimizer.cpp).
  int lower_optimizer(const ScheduleItem& in, Deps deps);
  std::vector<ShardPiece> optimizer_tensors() const;
  int lower_tiled_cpu_adam(const ScheduleItem& in, double params, const Deps& deps);
  int lower_update(const ScheduleItem& in, Deps deps);

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const CostModel& c_;
  const wl::StageMemory& st_;
  wl::StackStates stack_;
  bool fsdp_ = false, keep_gathered_ = false, transient_reduce_ = false;
  bool prescales_scatter_ = false;  // DeepSpeed ZeRO-3: a bucket is divided before its reduce-scatter
  // FSDP2's root module (the embedding, final norm and head: the units outside the blocks) runs
  // the whole model's forward, resharded when it returns under ZeRO-3; its pre-backward gathers
  // all of it when the head's backward starts, and its post-backward reshards and reduce-scatters
  // it once, after the whole backward (training_stacks.md, "FSDP2"): per unit, whether it is the
  // root's.
  std::vector<char> root_unit_;
  int root_first_unit_ = -1;       // the root's first unit (the embedding), whose backward is the last
  double root_params_ = 0;         // all of the root, gathered at once
  // The parameters a gather or fetch for unit `u` moves: the whole root for a root unit.
  double gathered_params(int u) const {
    return root_unit_[static_cast<std::size_t>(u)] != 0 ? root_params_ : units_[static_cast<std::size_t>(u)].params;
  }
  double reduce_input_alive_ = 0;  // FSDP2's reduce-scatter input, freed by the next one
  double gather_bytes_ = 0, grads_per_step_bytes_ = 0;
  std::map<std::pair<int, int>, std::vector<MemEffect>> kept_;  // (unit, micro-batch) -> its gathered unit's free
  std::set<int> grads_made_;
  std::map<Tier, double> grads_alive_;
  Program program_;
  ProgramWriter writer_;
  UnitWork work_;
  wl::StateBytes bytes_;
  bool gather_ = false;
  std::vector<UnitCost> units_;
  std::vector<int> bucket_of_unit_;
  std::vector<double> bucket_bytes_;
  std::vector<ScheduleItem> schedule_;
  double rank_params_ = 0;
  int ranks_per_node_ = 1;
  int micro_batches_ = 1;
  int step_ = 0;
  int states_ = -1;
  int previous_optimizer_ = -1;
  int host_block_ = -1;  // a blocking host copy the next compute waits for (lower_torch_grad_offload)
  // The first step's accumulating copies' page faults, were every page below glibc's threshold
  // fresh (CostModel::pageable_fault_seconds): said in a note, not replayed.
  double page_fault_bound_s_ = 0;
};

}  // namespace trainsim::sim::detail
