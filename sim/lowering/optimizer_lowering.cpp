// The optimizer step (GPU Adam, ZeRO-Offload's CPU-Adam, ZeRO-Infinity's NVMe sub-groups, L2L's
// node update) and the parameter update that follows it (H2D of CPU results, ZeRO 1-2 all-gather).
#include "lowerer.hpp"

namespace trainsim::sim::detail {

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

}  // namespace trainsim::sim::detail
