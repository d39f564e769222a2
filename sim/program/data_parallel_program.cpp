#include "data_parallel_program.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "activation_memory.hpp"
#include "data_parallel_schedule.hpp"
#include "grad_shard_pieces.hpp"
#include "unit_work.hpp"

namespace trainsim::sim {
namespace {

using wl::OffloadTarget;
using wl::Recompute;

class Builder {
 public:
  Builder(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c, const wl::MemoryEstimate& mem,
          int gpus_per_node, int micro_batches)
      : m_(m), s_(s), c_(c), st_(mem.stages[0]), writer_(program_) {
    stack_ = wl::stack_states(s.stack, m.numerics, s.zero_stage, micro_batches > 0 ? micro_batches : s.micro_batches());
    bytes_ = {stack_.params, stack_.grads, stack_.optimizer};
    fsdp_ = s.stack.kind == wl::StackKind::PYTORCH_FSDP;
    // FSDP2 gathers whole layers (fully_shard per block) in its param_dtype, also without
    // resharding after forward (then once per micro-batch, kept to the backward); DeepSpeed's
    // ZeRO-3 gathers submodules in the parameters' dtype (workloads/training_stacks.md).
    gather_ = (s.zero_stage == 3 || fsdp_) && s.dp > 1 && !s.l2l;
    gather_bytes_ = fsdp_ ? wl::dtype_bytes(s.stack.param_dtype) : bytes_.params;
    keep_gathered_ = fsdp_ && s.zero_stage < 3;
    // FSDP2 has no resident gradient buckets: a unit's backward makes its unsharded gradients in
    // param_dtype, its post-backward copies them into a fresh reduce_dtype reduce-scatter input and
    // frees them, and that input lives until the next unit's post-backward (or the end of the
    // backward) (training_stacks.md, "FSDP2"; reports/validation/memory_peak/).
    transient_reduce_ = fsdp_ && s.zero_stage >= 2 && !s.l2l;
    // The trainsim reference, as FSDP2, gathers whole layers (one all-gather per unit, the next
    // one prefetched) and reduce-scatters each unit's fp32 gradients after its backward
    // (training_stacks.md, "trainsim-reference"; calibrate/cuda/ref_param_store.cpp).
    const bool whole_units = fsdp_ || s.stack.is_reference();
    units_ = unit_costs(m, s, c, s.zero_stage == 3 && !s.l2l && !whole_units);
    std::vector<double> grad_bytes;
    for (const auto& u : units_) grad_bytes.push_back(u.params * stack_.wire_grad);
    // FSDP2 and the reference reduce-scatter each unit's gradients on their own.
    const double bucket = whole_units                    ? 0.0
                          : s.zero_stage == 0 || s.l2l ? s.buffers.ddp_bucket_bytes
                                                       : s.buffers.reduce_bucket_elems * stack_.wire_grad;
    bucket_of_unit_ = assign_buckets(grad_bytes, bucket);
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const auto k = static_cast<std::size_t>(bucket_of_unit_[u]);
      if (bucket_bytes_.size() <= k) bucket_bytes_.resize(k + 1, 0.0);
      bucket_bytes_[k] += grad_bytes[u];
    }
    work_.units = &units_;
    work_.activations = activation_sizes(m, s);
    work_.recompute = s.recompute;
    work_.transformer_layers = static_cast<int>(m.layers);
    work_.tp = s.tp;
    work_.sp = s.sp && s.tp > 1;
    work_.tp_bytes = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) * static_cast<double>(m.hidden) *
                     wl::activation_element_bytes(m.numerics);
    work_.dtype = m.numerics == wl::Numerics::FP32 ? Dtype::FP32
                  : m.numerics == wl::Numerics::FP16_MIXED ? Dtype::FP16
                                                           : Dtype::BF16;
    rank_params_ = st_.params_on_rank;
    ranks_per_node_ = std::min(s.gpus, gpus_per_node);
    micro_batches_ = micro_batches > 0 ? micro_batches : static_cast<int>(s.micro_batches());
  }

  ProgramSet run() {
    ProgramSet out;
    out.steps = s_.delayed_update ? 3 : 1;
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
    return out;
  }

 private:
  const std::vector<ScheduleItem>& schedule() {
    DataParallelPlan plan;
    for (const auto& u : units_) plan.unit_layer.push_back(u.layer);
    plan.checkpointed_layers = static_cast<int>(m_.layers);
    plan.micro_batches = micro_batches_;
    plan.fetch_params = s_.l2l || s_.offload_params != OffloadTarget::NONE;
    // L2L keeps the layer in use and the next one (Pudipeddi et al. 2020); ZeRO-Infinity reads
    // one unit further ahead than it gathers. FSDP2's copy of a unit's shard to the GPU is part of
    // that unit's all-gather (training_stacks.md, "FSDP2"), so it reads no further ahead.
    plan.fetch_ahead = s_.l2l ? 1 : fsdp_ ? plan.gather_ahead : 2;
    plan.gather_params = gather_;
    plan.gather_for_backward = !keep_gathered_;
    plan.recompute_full = s_.recompute == Recompute::FULL;
    plan.selective_unit_of_layer = s_.recompute == Recompute::SELECTIVE ? 0 : -1;
    // The trainsim reference gathers a layer once for its recompute and backward.
    plan.recompute_shares_gather = s_.stack.is_reference();
    // It adds every micro-batch's scattered gradients into its GPU shard and copies the shard to
    // the host after the last one (ref_param_store.cpp, grads_done).
    plan.offload_grads_once = s_.stack.is_reference();
    plan.offload_checkpoints = s_.offload_activations == wl::ActivationOffload::CPU;
    plan.reduce_every_micro_batch = s_.zero_stage >= 2 && !s_.l2l;
    plan.offload_grads = s_.l2l || s_.offload_optimizer != OffloadTarget::NONE;
    plan.update_params = !s_.l2l && ((s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1) ||
                                     (s_.offload_optimizer != OffloadTarget::NONE && s_.offload_params == OffloadTarget::NONE));
    plan.bucket_of_unit = bucket_of_unit_;
    schedule_ = data_parallel_schedule(plan);
    return schedule_;
  }

  double shard(double elems) const { return std::ceil(elems / s_.dp); }

  // Model states, allocated before the first instruction unit by unit from the units' own
  // parameters (ZeRO Sec. 5: 2 + 2 + K bytes per parameter, each part sharded over the data-
  // parallel ranks by stage, on the tier its offload puts it), so the replay's totals are its own
  // sums, not the memory model's; and the long-lived buffers the memory model sizes (buckets,
  // pinned staging).
  void allocate_model_states() {
    Instruction in;
    in.kind = InstrKind::MEMORY;
    in.name = "model_states";
    in.stream = Stream::COMPUTE;
    auto tier_of = [](OffloadTarget t) { return t == OffloadTarget::CPU ? Tier::HOST : t == OffloadTarget::NVME ? Tier::STORAGE : Tier::GPU; };
    double params = 0, grads = 0, optimizer = 0;
    for (const auto& unit : units_) {
      UnitCost u = unit;
      // ZeRO-3's head unit gathers the word embedding it is tied to (unit_costs.hpp); the tensor
      // itself is held once, with the embedding. The reference's whole-layer units have a head
      // without it (unit_costs.cpp, one unit per layer), so nothing is held twice there. (FSDP2's
      // per-layer head has none either; its accounting is left as the committed PyTorch rows were
      // validated with it.)
      const bool head_holds_tied = !s_.stack.is_reference();
      if (u.holds_head && head_holds_tied && m_.tied_embeddings && u.layer == static_cast<int>(m_.layers) &&
          s_.zero_stage == 3 && !s_.l2l) {
        u.params -= static_cast<double>(m_.vocab * m_.hidden) / s_.tp;
      }
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
    if (stack_.grads_per_step) grads_per_step_bytes_ = grads * bytes_.grads;
    else add(states_at == Tier::STORAGE && !grads_on_storage() ? Tier::HOST : states_at, MemClass::GRADS, grads * bytes_.grads);
    add(states_at, MemClass::OPTIMIZER, optimizer * bytes_.optimizer);
    if (!transient_reduce_) add(Tier::GPU, MemClass::BUCKETS, st_.buffers.comm_bucket_bytes);
    add(Tier::HOST, MemClass::STAGING, st_.buffers.pinned_host_bytes);
    states_ = writer_.add(std::move(in));
  }

  // ZeRO-Infinity writes each gradient partition to the optimizer's storage tier and reads it back
  // with the states (Rajbhandari et al. 2021, Sec. 5); the trainsim reference keeps its fp32
  // gradient copy in pinned host memory and streams only master weights and moments through
  // storage (training_stacks.md, "trainsim-reference"; calibrate/reference/storage_states.cpp).
  bool grads_on_storage() const { return !s_.stack.is_reference(); }

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
  int collective_stream_kernel(const char* name, const wl::MemoryKernel& k, const ScheduleItem& at, std::vector<int> deps) {
    Instruction in = base(InstrKind::COMPUTE, Stream::COMM, Category::COMMUNICATION, name, at);
    in.seconds = c_.kernel_seconds(k);
    in.after = std::move(deps);
    return writer_.add(std::move(in));
  }

  std::vector<int> lower_step(const std::vector<ScheduleItem>& plan, const std::vector<int>& barrier) {
    std::vector<int> done(plan.size(), -1);
    std::map<int, std::pair<MemClass, double>> holds;  // fetch/gather -> what its compute releases
    // A gather that serves several computes (a recompute and its backward) is freed by the last.
    std::map<int, std::size_t> last_user;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      for (int a : plan[i].after) last_user[a] = i;
    }
    std::vector<int> step_end;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const ScheduleItem& in = plan[i];
      std::vector<int> deps;
      for (int a : in.after) deps.push_back(done[static_cast<std::size_t>(a)]);
      if (in.after.empty()) deps = barrier;
      int out = -1;
      switch (in.kind) {
        case Instr::FETCH_PARAMS: {
          const double params = units_[static_cast<std::size_t>(in.unit)].params;
          const double bytes = (s_.l2l ? params : shard(params)) * bytes_.params;
          if (s_.offload_params == OffloadTarget::NVME) {
            Instruction read = copy(Tier::STORAGE, Tier::HOST, bytes, Stream::NODE, Category::OFFLOAD_IO, "nvme_read_params", in);
            read.after = deps;
            deps = {writer_.add(std::move(read))};
          }
          // The trainsim reference copies a unit's shard from the host on its collective stream, in
          // order with the all-gathers and reduce-scatters (calibrate/cuda/ref_param_store.cpp).
          const Stream fetch_stream = s_.stack.is_reference() ? Stream::COMM : Stream::H2D;
          Instruction h2d = copy(Tier::HOST, Tier::GPU, bytes, fetch_stream, Category::OFFLOAD_IO, "h2d_params", in);
          h2d.memory.push_back({Tier::GPU, MemClass::STAGING, bytes, false});
          h2d.after = deps;
          out = writer_.add(std::move(h2d));
          holds[static_cast<int>(i)] = {MemClass::STAGING, bytes};
          break;
        }
        case Instr::GATHER_PARAMS: {
          const double bytes = units_[static_cast<std::size_t>(in.unit)].params * gather_bytes_;
          // The fetched shard (if any) becomes part of the gathered unit.
          double staged = 0;
          for (int a : in.after) {
            if (plan[static_cast<std::size_t>(a)].kind == Instr::FETCH_PARAMS) staged = holds[a].second;
          }
          // The trainsim reference keeps no bf16 shard: it casts the unit's fp32 master shard to
          // bf16 on its collective stream right before the all-gather (ref_param_store.cpp,
          // gather_into; a fetched shard arrives in bf16). A kernel of the GPU beside its compute.
          if (s_.stack.is_reference() && staged == 0) {
            const double elems = shard(units_[static_cast<std::size_t>(in.unit)].params);
            deps = {collective_stream_kernel("cast_shard", {"ref:cast_fp32_to_bf16", elems * (4 + 2)}, in, deps)};
          }
          Instruction g = collective(CollectiveKind::ALL_GATHER, bytes, "gather_params", in);
          g.memory.push_back({Tier::GPU, MemClass::GATHERED, bytes, false});
          // FSDP2 casts each fetched fp32 shard to param_dtype and frees it before the all-gather
          // runs (training_stacks.md, "FSDP2"); ZeRO-Infinity's shard is its all-gather's input.
          if (staged > 0) g.memory.push_back({Tier::GPU, MemClass::STAGING, -staged, !fsdp_});
          g.after = deps;
          out = writer_.add(std::move(g));
          holds[static_cast<int>(i)] = {MemClass::GATHERED, bytes};
          break;
        }
        case Instr::FORWARD:
        case Instr::RECOMPUTE:
        case Instr::BACKWARD: {
          // Parameters gathered (or fetched, without a gather) for this compute are freed at its end.
          std::vector<MemEffect> release;
          for (int a : in.after) {
            const Instr k = plan[static_cast<std::size_t>(a)].kind;
            if ((k == Instr::GATHER_PARAMS || k == Instr::FETCH_PARAMS) && holds.count(a) && last_user[a] == i) {
              if (keep_gathered_ && in.kind == Instr::FORWARD) {
                kept_[{in.unit, in.micro_batch}].push_back({Tier::GPU, holds[a].first, -holds[a].second, true});
              } else {
                release.push_back({Tier::GPU, holds[a].first, -holds[a].second, true});
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
          c.after = deps;
          out = writer_.add(std::move(c));
          break;
        }
        case Instr::REDUCE_GRADS: {
          const double bytes = bucket_bytes_[static_cast<std::size_t>(in.bucket)];
          const bool scatter = s_.zero_stage >= 2 && !s_.l2l;
          Instruction r = collective(scatter ? CollectiveKind::REDUCE_SCATTER : CollectiveKind::ALL_REDUCE, bytes, "reduce_grads", in);
          r.after = deps;
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
          if (s_.stack.is_reference() && scatter) {
            const double elems = shard(bytes / stack_.wire_grad);
            out = collective_stream_kernel("accumulate_grad_shard", {"ref:add_inplace_fp32", elems * 3 * 4}, in, {out});
          }
          break;
        }
        case Instr::OFFLOAD_GRADS: {
          if (stack_.blocking_pageable_grad_offload && s_.offload_optimizer == OffloadTarget::CPU && !s_.l2l) {
            out = lower_torch_grad_offload(in, deps);
            break;
          }
          const double bucket = bucket_bytes_[static_cast<std::size_t>(in.bucket)];
          // Each rank moves its shard; L2L's ranks of a node share the node's one copy.
          const double bytes = s_.l2l ? bucket / ranks_per_node_ : std::ceil(bucket / s_.dp);
          // The reference copies it on its collective stream, in order with the collectives (grads_done).
          const Stream d2h_stream = s_.stack.is_reference() ? Stream::COMM : Stream::D2H;
          Instruction d2h = copy(Tier::GPU, Tier::HOST, bytes, d2h_stream, Category::OFFLOAD_IO, "d2h_grads", in);
          d2h.after = deps;
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
      done[i] = out;
    }
    return step_end;
  }

  // FSDP2's offload of a bucket's reduced shards (training_stacks.md, "FSDP2"), tensor by tensor
  // (grad_shard_pieces.hpp), the node's ranks copying at once: the step's first micro-batch into
  // fresh pinned memory, asynchronously; every later one into fresh pageable memory with the host
  // waiting, then `.grad += new` on the CPU, after which the host goes on (host_block_).
  int lower_torch_grad_offload(const ScheduleItem& in, const std::vector<int>& deps) {
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
      d2h.after = out < 0 ? deps : std::vector<int>{out};
      out = writer_.add(std::move(d2h));
      add_s += p.count * c_.torch_grad_add_seconds(p.bytes, ranks_per_node_);
    }
    if (!accumulate) return out;
    Instruction add = base(InstrKind::HOST_COMPUTE, Stream::HOST, Category::OFFLOAD_IO, "cpu_grad_add", in);
    add.seconds = add_s;
    add.after = {out};
    host_block_ = writer_.add(std::move(add));
    return host_block_;
  }

  int lower_optimizer(const ScheduleItem& in, std::vector<int> deps) {
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
      // PyTorch's fused AdamW: fp32 parameter, gradient and both moments (28 bytes per parameter).
      op.seconds = s_.stack.is_pytorch()     ? c_.kernel_seconds({"torch:adamw_fused_fp32", params * 28.0})
                   : s_.stack.is_reference() ? c_.reference_adam_seconds(params, stack_.keeps_param_shard)
                                             : c_.gpu_adam_seconds(params, m_.numerics);
      op.after = deps;
      out = writer_.add(std::move(op));
    } else if (s_.offload_optimizer == OffloadTarget::CPU) {
      // ZeRO-Offload: each rank's CPU-Adam over its shard; the node's cores are shared. A PyTorch
      // stack runs torch's own CPU AdamW instead, at its calibrated rate per process with the
      // node's ranks stepping at once (training_stacks.md, "FSDP2").
      Instruction op = base(InstrKind::HOST_COMPUTE, Stream::NODE, Category::OPTIMIZER, "cpu_adam", in);
      op.params = params;
      if (s_.stack.is_pytorch()) op.seconds = c_.torch_cpu_adam_seconds(params, ranks_per_node_);
      op.after = deps;
      out = writer_.add(std::move(op));
    } else {
      // ZeRO-Infinity with optimizer states on NVMe: sub-groups stream through host memory: read
      // states and gradients, CPU-Adam, write the states back (and the fp16 parameters when they
      // live on NVMe too). Reads, updates and writes of successive sub-groups overlap.
      int read_id = -1, cpu_id = -1, write_id = -1;
      for (double left = params; left > 0; left -= s_.buffers.sub_group_elems) {
        const double n = std::min(left, s_.buffers.sub_group_elems);
        Instruction read = copy(Tier::STORAGE, Tier::HOST, n * (bytes_.optimizer + (grads_on_storage() ? bytes_.grads : 0.0)), Stream::NODE,
                                Category::OPTIMIZER, "nvme_read_optimizer", in);
        read.after = deps;
        if (read_id >= 0) read.after.push_back(read_id);
        read_id = writer_.add(std::move(read));
        Instruction cpu = base(InstrKind::HOST_COMPUTE, Stream::NODE, Category::OPTIMIZER, "cpu_adam", in);
        cpu.params = n;
        cpu.after = {read_id};
        if (cpu_id >= 0) cpu.after.push_back(cpu_id);
        cpu_id = writer_.add(std::move(cpu));
        Instruction write = copy(Tier::HOST, Tier::STORAGE,
                                 n * (bytes_.optimizer + (s_.offload_params == OffloadTarget::NVME ? bytes_.params : 0.0)),
                                 Stream::NODE, Category::OPTIMIZER, "nvme_write_optimizer", in);
        write.after = {cpu_id};
        if (write_id >= 0) write.after.push_back(write_id);
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

  int lower_update(const ScheduleItem& in, std::vector<int> deps) {
    int out = deps.empty() ? -1 : deps.back();
    if (s_.offload_optimizer != OffloadTarget::NONE) {
      // The CPU optimizer's 16-bit result goes back to the GPU.
      Instruction h2d = copy(Tier::HOST, Tier::GPU, shard(rank_params_) * bytes_.params, Stream::H2D, Category::OFFLOAD_IO,
                             "h2d_updated_params", in);
      h2d.after = deps;
      out = writer_.add(std::move(h2d));
    }
    if (s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1) {
      // ZeRO 1-2: every rank needs all updated parameters: an all-gather per allgather bucket.
      const double total = rank_params_ * bytes_.params;
      const double bucket = s_.buffers.allgather_bucket_elems * bytes_.params;
      std::vector<int> after{out};
      for (double left = total; left > 0; left -= bucket) {
        Instruction g = collective(CollectiveKind::ALL_GATHER, std::min(left, bucket), "gather_updated_params", in);
        g.after = after;
        out = writer_.add(std::move(g));
        after.clear();
      }
    }
    return out;
  }

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const CostModel& c_;
  const wl::StageMemory& st_;
  wl::StackStates stack_;
  bool fsdp_ = false, keep_gathered_ = false, transient_reduce_ = false;
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
};

}  // namespace

ProgramSet build_data_parallel_program(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                                       const wl::MemoryEstimate& memory, int gpus_per_node, int micro_batches) {
  return Builder(m, s, costs, memory, gpus_per_node, micro_batches).run();
}

}  // namespace trainsim::sim
