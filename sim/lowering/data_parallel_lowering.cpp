#include "data_parallel_lowering.hpp"

#include "lowerer.hpp"

namespace trainsim::sim {
namespace detail {

// A compute on every GPU: its segments, with tensor parallelism's all-reduces between them.
void Lowerer::lower_compute(const Instruction& in, const std::vector<std::vector<OpId>>& deps, std::vector<OpId>& out,
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


}  // namespace detail

LoweredGraph lower_data_parallel(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                 const CostModel& costs, const wl::MemoryEstimate& memory) {
  return detail::Lowerer(m, s, costs, memory, profile.gpus_per_node()).run();
}

}  // namespace trainsim::sim
