#include "data_parallel_lowering.hpp"

#include <cmath>
#include <functional>
#include <map>

#include "activation_memory.hpp"
#include "data_parallel_schedule.hpp"
#include "unit_costs.hpp"

namespace trainsim::sim {
namespace {

using wl::OffloadTarget;
using wl::Recompute;

class Lowerer {
 public:
  Lowerer(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c, const wl::MemoryEstimate& mem,
          int gpus_per_node)
      : m_(m), s_(s), c_(c), mem_(mem), topo_(node_topology(s, gpus_per_node)), b_(topo_.local_gpus) {
    bytes_ = wl::state_bytes(m.numerics);
    gather_ = s.zero_stage == 3 && s.dp > 1 && !s.l2l;
    units_ = unit_costs(m, s, c, s.zero_stage == 3 && !s.l2l);
    std::vector<double> grad_bytes;
    for (const auto& u : units_) grad_bytes.push_back(u.params * bytes_.grads);
    const double bucket = s.zero_stage == 0 || s.l2l ? s.buffers.ddp_bucket_bytes : s.buffers.reduce_bucket_elems * bytes_.grads;
    bucket_of_unit_ = assign_buckets(grad_bytes, bucket);
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const auto k = static_cast<std::size_t>(bucket_of_unit_[u]);
      if (bucket_bytes_.size() <= k) bucket_bytes_.resize(k + 1, 0.0);
      bucket_bytes_[k] += grad_bytes[u];
    }
    const wl::ActivationShape shape{s.seq, s.micro_batch, s.tp, s.sp, s.recompute};
    const wl::LayerActivations acts = wl::layer_activation_bytes(m, shape);
    stored_ = acts.stored;
    full_ = acts.full;
    embedding_act_ = wl::embedding_activation_bytes(m, shape);
    output_act_ = wl::output_norm_activation_bytes(m, shape);
    logits_ = wl::logits_bytes(m, shape);
    tp_bytes_ = static_cast<double>(s.micro_batch * s.seq * m.hidden) * wl::activation_element_bytes(m.numerics);
    rank_params_ = mem.stages[0].params_on_rank;
  }

  LoweredGraph run() {
    LoweredGraph out;
    out.steps = s_.delayed_update ? 3 : 1;
    const std::vector<Instruction> instrs = data_parallel_schedule(plan());
    for (int step = 0; step < out.steps; ++step) {
      // Without the delayed update a step starts from the parameters the previous step updated;
      // with it, from those of two steps before (Ren et al. 2021, Sec. 5.2).
      const int source = step - (s_.delayed_update ? 2 : 1);
      step_ = step;
      out.step_ends.push_back(lower_step(instrs, source >= 0 ? &out.step_ends[static_cast<std::size_t>(source)] : nullptr));
    }
    out.caps.per_op = std::move(caps_);
    out.caps.per_op.resize(boost::num_vertices(b_.graph()), 0.0);
    out.graph = b_.take();
    out.topology = topo_;
    const wl::StageMemory& st = mem_.stages[0];
    out.gpu_baseline_bytes.assign(static_cast<std::size_t>(topo_.local_gpus), st.params_at.gpu + st.grads_at.gpu +
                                                                                 st.optimizer_at.gpu + st.buffers.comm_bucket_bytes +
                                                                                 st.buffers.weight_stash_bytes);
    out.host_baseline_bytes =
        topo_.local_gpus * (st.params_at.cpu + st.grads_at.cpu + st.optimizer_at.cpu + st.buffers.pinned_host_bytes);
    out.storage_baseline_bytes = topo_.local_gpus * st.nvme_bytes();
    return out;
  }

 private:
  DataParallelPlan plan() const {
    DataParallelPlan plan;
    for (const auto& u : units_) plan.unit_layer.push_back(u.layer);
    plan.checkpointed_layers = static_cast<int>(m_.layers);
    plan.micro_batches = static_cast<int>(s_.micro_batches());
    plan.fetch_params = s_.l2l || s_.offload_params != OffloadTarget::NONE;
    // L2L keeps the layer in use and the next one (Pudipeddi et al. 2020); ZeRO-Infinity reads
    // one unit further ahead than it gathers.
    plan.fetch_ahead = s_.l2l ? 1 : 2;
    plan.gather_params = gather_;
    plan.recompute_full = s_.recompute == Recompute::FULL;
    plan.selective_unit_of_layer = s_.recompute == Recompute::SELECTIVE ? 0 : -1;
    plan.offload_checkpoints = s_.offload_activations == wl::ActivationOffload::CPU;
    plan.reduce_every_micro_batch = s_.zero_stage >= 2 && !s_.l2l;
    plan.offload_grads = s_.l2l || s_.offload_optimizer != OffloadTarget::NONE;
    plan.update_params = !s_.l2l && ((s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1) ||
                                     (s_.offload_optimizer != OffloadTarget::NONE && s_.offload_params == OffloadTarget::NONE));
    plan.bucket_of_unit = bucket_of_unit_;
    return plan;
  }

  double shard(double elems) const { return std::ceil(elems / s_.dp); }
  const UnitCost& unit(int u) const { return units_[static_cast<std::size_t>(u)]; }
  bool first_of_layer(int u) const { return u == 0 || unit(u - 1).layer != unit(u).layer; }
  bool last_of_layer(int u) const {
    return u + 1 == static_cast<int>(units_.size()) || unit(u + 1).layer != unit(u).layer;
  }
  bool transformer_layer(int layer) const { return layer >= 0 && layer < static_cast<int>(m_.layers); }

  Op base(OpKind kind, Category cat, Stream stream, int gpu, const char* name, const Instruction& in) const {
    Op op;
    op.kind = kind;
    op.category = cat;
    op.stream = stream;
    op.gpu = gpu;
    op.name = name;
    op.layer = in.layer;
    op.micro_batch = in.micro_batch;
    op.step = step_;
    return op;
  }

  Op collective(CollectiveKind kind, int ring, const std::vector<int>& members, int group, double bytes, const char* name,
                const Instruction& in) const {
    Op op = base(OpKind::COLLECTIVE, Category::COMMUNICATION, Stream::COMM, -1, name, in);
    op.participants = members;
    op.collective = kind;
    op.ring = ring;
    op.group_size = group;
    op.bytes = bytes;
    return op;
  }

  OpId add(Op op, const std::vector<OpId>& deps) {
    double cap = 0;
    if (op.kind == OpKind::COLLECTIVE) cap = c_.collective_cap(op.collective, op.group_size, op.bytes);
    if (op.kind == OpKind::COPY_H2D || op.kind == OpKind::COPY_D2H) cap = c_.copy_cap(op.kind, op.bytes);
    const OpId id = b_.add(std::move(op), deps);
    if (cap > 0) {
      caps_.resize(id + 1, 0.0);
      caps_[id] = cap;
    }
    return id;
  }

  static void alloc(Op& op, Device d, MemClass cls, double bytes, bool at_end = false) {
    if (bytes != 0) op.memory.push_back({d, cls, bytes, at_end});
  }

  // The layer-level activation events of a compute, for GPU g.
  void activation_events(const Instruction& in, int g, Op& first, Op& last) const {
    const Device d = Device::gpu(g);
    const int u = in.unit;
    const UnitCost& uc = unit(u);
    const bool full = s_.recompute == Recompute::FULL;
    const bool layer = transformer_layer(uc.layer);
    const double stored = layer && !full ? stored_ : 0.0;
    const double ckpt = layer && full ? stored_ : 0.0;
    const double working = layer && s_.recompute != Recompute::NONE ? full_ - stored_ : 0.0;
    if (in.kind == Instr::FORWARD) {
      if (last_of_layer(u)) {
        alloc(last, d, MemClass::ACTIVATIONS, stored, true);
        alloc(last, d, MemClass::CHECKPOINTS, ckpt, true);
      }
      if (uc.holds_embedding) alloc(last, d, MemClass::ACTIVATIONS, embedding_act_, true);
      if (uc.holds_head) {
        alloc(last, d, MemClass::ACTIVATIONS, output_act_, true);
        alloc(last, d, MemClass::LOGITS, logits_, true);
      }
    } else if (in.kind == Instr::RECOMPUTE) {
      // The recomputed tensors of the layer live until its backward is done.
      if (s_.recompute == Recompute::SELECTIVE || first_of_layer(u)) alloc(first, d, MemClass::ACTIVATIONS, working);
    } else {
      if (first_of_layer(u)) {
        alloc(last, d, MemClass::ACTIVATIONS, -stored - working, true);
        alloc(last, d, MemClass::CHECKPOINTS, -ckpt, true);
      }
      if (uc.holds_embedding) alloc(last, d, MemClass::ACTIVATIONS, -embedding_act_, true);
      if (uc.holds_head) {
        alloc(last, d, MemClass::ACTIVATIONS, -output_act_, true);
        alloc(last, d, MemClass::LOGITS, -logits_, true);
      }
    }
  }

  // A compute on every GPU: its segments, with tensor parallelism's all-reduces between them.
  void lower_compute(const Instruction& in, const std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out,
                     const std::vector<std::pair<MemClass, double>>& release) {
    const UnitCost& uc = unit(in.unit);
    const std::vector<Segment>& segments = in.kind == Instr::FORWARD    ? uc.forward
                                           : in.kind == Instr::BACKWARD ? uc.backward
                                           : s_.recompute == Recompute::FULL ? uc.full_recompute
                                                                            : uc.selective_recompute;
    const char* name = in.kind == Instr::FORWARD ? "forward" : in.kind == Instr::BACKWARD ? "backward" : "recompute";
    for (int group = 0; group < topo_.dp_local; ++group) {
      std::vector<int> members;
      for (int i = 0; i < s_.tp; ++i) members.push_back(group * s_.tp + i);
      std::vector<std::vector<OpId>> waits(members.size());
      for (std::size_t i = 0; i < members.size(); ++i) waits[i] = deps[static_cast<std::size_t>(members[i])];
      std::vector<OpId> ends(members.size(), GraphBuilder::NONE);
      for (std::size_t k = 0; k < segments.size(); ++k) {
        const Segment& seg = segments[k];
        const bool last_segment = k + 1 == segments.size();
        std::vector<OpId> computed;
        for (std::size_t i = 0; i < members.size(); ++i) {
          const int g = members[i];
          Op op = base(OpKind::COMPUTE, Category::COMPUTE, Stream::COMPUTE, g, name, in);
          op.seconds = seg.seconds;
          op.flops = seg.flops;
          Op ignored;
          if (k == 0) activation_events(in, g, op, ignored);
          if (last_segment && !seg.tp_allreduce_after) {
            Op first_ignored;
            activation_events(in, g, first_ignored, op);
            for (const auto& [cls, bytes] : release) alloc(op, Device::gpu(g), cls, -bytes, true);
          }
          computed.push_back(add(std::move(op), waits[i]));
          waits[i].clear();
        }
        if (!seg.tp_allreduce_after) {
          ends = computed;
          continue;
        }
        Op ar = collective(CollectiveKind::ALL_REDUCE, topo_.tp_ring(members[0]), members, s_.tp, tp_bytes_, "tp_allreduce", in);
        if (last_segment) {
          for (int g : members) {
            Op first_ignored;
            activation_events(in, g, first_ignored, ar);
            for (const auto& [cls, bytes] : release) alloc(ar, Device::gpu(g), cls, -bytes, true);
          }
        }
        const OpId id = add(std::move(ar), computed);
        for (std::size_t i = 0; i < members.size(); ++i) {
          waits[i] = {id};
          ends[i] = id;
        }
      }
      for (std::size_t i = 0; i < members.size(); ++i) out[static_cast<std::size_t>(members[i])] = ends[i];
    }
  }

  std::vector<OpId> lower_step(const std::vector<Instruction>& instrs, const std::vector<OpId>* barrier);
  void lower_optimizer(const Instruction& in, std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out);
  void lower_update(const Instruction& in, const std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out);

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const CostModel& c_;
  const wl::MemoryEstimate& mem_;
  NodeTopology topo_;
  GraphBuilder b_;
  wl::StateBytes bytes_;
  bool gather_ = false;
  std::vector<UnitCost> units_;
  std::vector<int> bucket_of_unit_;
  std::vector<double> bucket_bytes_;
  double stored_ = 0, full_ = 0, embedding_act_ = 0, output_act_ = 0, logits_ = 0, tp_bytes_ = 0;
  double rank_params_ = 0;
  int step_ = 0;
  std::vector<double> caps_;
  std::vector<OpId> previous_optimizer_;
};

std::vector<OpId> Lowerer::lower_step(const std::vector<Instruction>& instrs, const std::vector<OpId>* barrier) {
  const int G = topo_.local_gpus;
  std::vector<std::vector<OpId>> done(instrs.size(), std::vector<OpId>(static_cast<std::size_t>(G), GraphBuilder::NONE));
  std::map<int, std::pair<MemClass, double>> holds;  // fetch/gather instruction -> what its compute releases
  std::vector<OpId> step_end(static_cast<std::size_t>(G), GraphBuilder::NONE);
  for (std::size_t i = 0; i < instrs.size(); ++i) {
    const Instruction& in = instrs[i];
    std::vector<std::vector<OpId>> deps(static_cast<std::size_t>(G));
    for (int g = 0; g < G; ++g) {
      auto& d = deps[static_cast<std::size_t>(g)];
      for (int a : in.after) d.push_back(done[static_cast<std::size_t>(a)][static_cast<std::size_t>(g)]);
      if (in.after.empty() && barrier != nullptr) d.push_back((*barrier)[static_cast<std::size_t>(g)]);
    }
    auto& out = done[i];
    switch (in.kind) {
      case Instr::FETCH_PARAMS: {
        const double params = unit(in.unit).params;
        const double bytes = (s_.l2l ? params : shard(params)) * bytes_.params;
        for (int g = 0; g < G; ++g) {
          std::vector<OpId> d = deps[static_cast<std::size_t>(g)];
          if (s_.offload_params == OffloadTarget::NVME) {
            Op read = base(OpKind::STORAGE_READ, Category::OFFLOAD_IO, Stream::NODE, g, "nvme_read_params", in);
            read.bytes = bytes;
            d = {add(std::move(read), d)};
          }
          Op h2d = base(OpKind::COPY_H2D, Category::OFFLOAD_IO, Stream::H2D, g, "h2d_params", in);
          h2d.bytes = bytes;
          alloc(h2d, Device::gpu(g), MemClass::STAGING, bytes);
          out[static_cast<std::size_t>(g)] = add(std::move(h2d), d);
        }
        holds[static_cast<int>(i)] = {MemClass::STAGING, bytes};
        break;
      }
      case Instr::GATHER_PARAMS: {
        const double bytes = unit(in.unit).params * bytes_.params;
        // The fetched shard (if any) becomes part of the gathered unit.
        double staged = 0;
        for (int a : in.after) {
          if (instrs[static_cast<std::size_t>(a)].kind == Instr::FETCH_PARAMS) staged = holds[a].second;
        }
        for (int r = 0; r < s_.tp; ++r) {
          const auto members = topo_.dp_members(r);
          Op op = collective(CollectiveKind::ALL_GATHER, r, members, s_.dp, bytes, "gather_params", in);
          std::vector<OpId> d;
          for (int g : members) {
            alloc(op, Device::gpu(g), MemClass::GATHERED, bytes);
            alloc(op, Device::gpu(g), MemClass::STAGING, -staged, true);
            d.insert(d.end(), deps[static_cast<std::size_t>(g)].begin(), deps[static_cast<std::size_t>(g)].end());
          }
          const OpId id = add(std::move(op), d);
          for (int g : members) out[static_cast<std::size_t>(g)] = id;
        }
        holds[static_cast<int>(i)] = {MemClass::GATHERED, bytes};
        break;
      }
      case Instr::FORWARD:
      case Instr::RECOMPUTE:
      case Instr::BACKWARD: {
        // Parameters gathered (or fetched, without a gather) for this compute are freed at its end.
        std::vector<std::pair<MemClass, double>> release;
        for (int a : in.after) {
          const Instr k = instrs[static_cast<std::size_t>(a)].kind;
          if ((k == Instr::GATHER_PARAMS || k == Instr::FETCH_PARAMS) && holds.count(a)) release.push_back(holds[a]);
        }
        lower_compute(in, deps, out, release);
        break;
      }
      case Instr::SAVE_CHECKPOINT:
      case Instr::LOAD_CHECKPOINT: {
        const bool save = in.kind == Instr::SAVE_CHECKPOINT;
        for (int g = 0; g < G; ++g) {
          Op op = base(save ? OpKind::COPY_D2H : OpKind::COPY_H2D, Category::OFFLOAD_IO, save ? Stream::D2H : Stream::H2D, g,
                       save ? "checkpoint_out" : "checkpoint_in", in);
          op.bytes = stored_;
          alloc(op, Device::gpu(g), MemClass::CHECKPOINTS, save ? -stored_ : stored_, save);
          alloc(op, Device::host(), MemClass::CHECKPOINTS, save ? stored_ : -stored_, !save);
          out[static_cast<std::size_t>(g)] = add(std::move(op), deps[static_cast<std::size_t>(g)]);
        }
        break;
      }
      case Instr::REDUCE_GRADS: {
        const double bytes = bucket_bytes_[static_cast<std::size_t>(in.bucket)];
        const bool scatter = s_.zero_stage >= 2 && !s_.l2l;
        for (int r = 0; r < s_.tp; ++r) {
          const auto members = topo_.dp_members(r);
          std::vector<OpId> d;
          for (int g : members) d.insert(d.end(), deps[static_cast<std::size_t>(g)].begin(), deps[static_cast<std::size_t>(g)].end());
          const OpId id = add(collective(scatter ? CollectiveKind::REDUCE_SCATTER : CollectiveKind::ALL_REDUCE, r, members,
                                         s_.dp, bytes, "reduce_grads", in),
                              d);
          for (int g : members) out[static_cast<std::size_t>(g)] = id;
        }
        break;
      }
      case Instr::OFFLOAD_GRADS: {
        const double bucket = bucket_bytes_[static_cast<std::size_t>(in.bucket)];
        // Each rank moves its shard; L2L's ranks of a node share the node's one copy.
        const double bytes = s_.l2l ? bucket / topo_.dp_local : std::ceil(bucket / s_.dp);
        for (int g = 0; g < G; ++g) {
          Op op = base(OpKind::COPY_D2H, Category::OFFLOAD_IO, Stream::D2H, g, "d2h_grads", in);
          op.bytes = bytes;
          OpId id = add(std::move(op), deps[static_cast<std::size_t>(g)]);
          if (s_.offload_optimizer == OffloadTarget::NVME) {
            Op w = base(OpKind::STORAGE_WRITE, Category::OFFLOAD_IO, Stream::NODE, g, "nvme_write_grads", in);
            w.bytes = bytes;
            id = add(std::move(w), {id});
          }
          out[static_cast<std::size_t>(g)] = id;
        }
        break;
      }
      case Instr::OPTIMIZER_STEP:
        lower_optimizer(in, deps, out);
        step_end = out;
        break;
      case Instr::UPDATE_PARAMS:
        lower_update(in, deps, out);
        step_end = out;
        break;
    }
  }
  return step_end;
}

void Lowerer::lower_optimizer(const Instruction& in, std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out) {
  const int G = topo_.local_gpus;
  const double params = s_.zero_stage >= 1 ? shard(rank_params_) : rank_params_;
  for (int g = 0; g < G && previous_optimizer_.size() == static_cast<std::size_t>(G); ++g) {
    deps[static_cast<std::size_t>(g)].push_back(previous_optimizer_[static_cast<std::size_t>(g)]);
  }
  if (s_.l2l) {
    // One update of the node's copy on the CPU (L2L's eager parameter server).
    Op op = base(OpKind::CPU, Category::OPTIMIZER, Stream::NODE, -1, "cpu_adam", in);
    op.params = rank_params_;
    std::vector<OpId> all;
    for (const auto& d : deps) all.insert(all.end(), d.begin(), d.end());
    const OpId id = add(std::move(op), all);
    for (int g = 0; g < G; ++g) out[static_cast<std::size_t>(g)] = id;
  } else if (s_.offload_optimizer == OffloadTarget::NONE) {
    for (int g = 0; g < G; ++g) {
      Op op = base(OpKind::COMPUTE, Category::OPTIMIZER, Stream::COMPUTE, g, "adam", in);
      op.seconds = c_.gpu_adam_seconds(params, m_.numerics);
      out[static_cast<std::size_t>(g)] = add(std::move(op), deps[static_cast<std::size_t>(g)]);
    }
  } else if (s_.offload_optimizer == OffloadTarget::CPU) {
    // ZeRO-Offload: each rank's CPU-Adam over its shard; the node's cores are shared.
    for (int g = 0; g < G; ++g) {
      Op op = base(OpKind::CPU, Category::OPTIMIZER, Stream::NODE, g, "cpu_adam", in);
      op.params = params;
      out[static_cast<std::size_t>(g)] = add(std::move(op), deps[static_cast<std::size_t>(g)]);
    }
  } else {
    // ZeRO-Infinity with optimizer states on NVMe: sub-groups stream through host memory: read
    // states and gradients, CPU-Adam, write the states back (and the fp16 parameters when they
    // live on NVMe too). Reads, updates and writes of successive sub-groups overlap.
    for (int g = 0; g < G; ++g) {
      OpId read_id = GraphBuilder::NONE, cpu_id = GraphBuilder::NONE, write_id = GraphBuilder::NONE;
      for (double left = params; left > 0; left -= s_.buffers.sub_group_elems) {
        const double n = std::min(left, s_.buffers.sub_group_elems);
        Op read = base(OpKind::STORAGE_READ, Category::OPTIMIZER, Stream::NODE, g, "nvme_read_optimizer", in);
        read.bytes = n * (bytes_.optimizer + bytes_.grads);
        std::vector<OpId> rd = deps[static_cast<std::size_t>(g)];
        rd.push_back(read_id);
        read_id = add(std::move(read), rd);
        Op cpu = base(OpKind::CPU, Category::OPTIMIZER, Stream::NODE, g, "cpu_adam", in);
        cpu.params = n;
        cpu_id = add(std::move(cpu), {read_id, cpu_id});
        Op write = base(OpKind::STORAGE_WRITE, Category::OPTIMIZER, Stream::NODE, g, "nvme_write_optimizer", in);
        write.bytes = n * (bytes_.optimizer + (s_.offload_params == OffloadTarget::NVME ? bytes_.params : 0.0));
        write_id = add(std::move(write), {cpu_id, write_id});
      }
      out[static_cast<std::size_t>(g)] = write_id;
    }
  }
  previous_optimizer_ = out;
}

void Lowerer::lower_update(const Instruction& in, const std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out) {
  const int G = topo_.local_gpus;
  for (int g = 0; g < G; ++g) {
    std::vector<OpId> d = deps[static_cast<std::size_t>(g)];
    if (s_.offload_optimizer != OffloadTarget::NONE) {
      // The CPU optimizer's 16-bit result goes back to the GPU.
      Op h2d = base(OpKind::COPY_H2D, Category::OFFLOAD_IO, Stream::H2D, g, "h2d_updated_params", in);
      h2d.bytes = shard(rank_params_) * bytes_.params;
      d = {add(std::move(h2d), d)};
    }
    out[static_cast<std::size_t>(g)] = d.empty() ? GraphBuilder::NONE : d.back();
  }
  if (s_.zero_stage >= 1 && s_.zero_stage <= 2 && s_.dp > 1) {
    // ZeRO 1-2: every rank needs all updated parameters: an all-gather per allgather bucket.
    const double total = rank_params_ * bytes_.params;
    const double bucket = s_.buffers.allgather_bucket_elems * bytes_.params;
    for (int r = 0; r < s_.tp; ++r) {
      const auto members = topo_.dp_members(r);
      std::vector<OpId> d;
      for (int g : members) d.push_back(out[static_cast<std::size_t>(g)]);
      OpId last = GraphBuilder::NONE;
      for (double left = total; left > 0; left -= bucket) {
        last = add(collective(CollectiveKind::ALL_GATHER, r, members, s_.dp, std::min(left, bucket), "gather_updated_params", in), d);
        d.clear();
      }
      for (int g : members) out[static_cast<std::size_t>(g)] = last;
    }
  }
}

}  // namespace

LoweredGraph lower_data_parallel(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                 const CostModel& costs, const wl::MemoryEstimate& memory) {
  return Lowerer(m, s, costs, memory, profile.gpus_per_node()).run();
}

}  // namespace trainsim::sim
