// One step's instructions as operations: fetches, gathers, computes, checkpoint copies,
// reductions and gradient offloads (the optimizer and update are in optimizer_lowering.cpp).
#include "lowerer.hpp"

namespace trainsim::sim::detail {

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

}  // namespace trainsim::sim::detail
