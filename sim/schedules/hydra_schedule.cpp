// Hydra's spilled execution (Nagrecha & Kumar, arXiv 2110.08633; knagrecha/hydra): a model too
// large for one GPU is cut into N shards (`chunks`) kept in host memory, and one device runs them
// in turn. Per micro-batch: shards 0 .. N-1 each PROMOTE, FORWARD, DEMOTE, except the last shard,
// which stays on the GPU and runs its BACKWARD at once (Hydra's ForwardLoss: forward, loss and
// backward in one visit); then shards N-2 .. 0 each PROMOTE, BACKWARD, DEMOTE, and the last shard
// is demoted after its backward. Hydra's Backward task reruns the shard's forward from its saved
// input before differentiating; that recompute is the builder's cost, not an ordering matter.
//
// Optimizer: Hydra steps a shard's optimizer inside each of its backward visits, i.e. once per
// mini-batch. We keep that placement and add gradient accumulation over a step's m micro-batches:
// in the step's last micro-batch each shard's OPTIMIZER_STEP follows its BACKWARD while the shard
// is still promoted, so a shard is only ever computed or updated on the GPU, nothing needs a
// second visit, and with m = 1 this is Hydra's order exactly. Every pass of step t computes with
// version t of its shard.
//
// The schedule never holds two shards at once; the builder overlaps the next PROMOTE with the
// current compute (Hydra's double buffering) and may drop a DEMOTE immediately followed by the
// PROMOTE of the same shard (shard 0 between micro-batches).
//
// N = 3, one micro-batch and step: P0 F0 D0 P1 F1 D1 P2 F2 B2 U2 D2 P1 B1 U1 D1 P0 B0 U0 D0.

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

PipelineSchedule hydra_schedule(const PipelineShape& shape) {
  check_shape(wl::Schedule::HYDRA, shape);
  const int shards = shape.chunks;
  const int m = shape.micro_batches;
  StageSchedule order;
  order.reserve(static_cast<std::size_t>(shape.steps) * static_cast<std::size_t>(m) *
                (7 * static_cast<std::size_t>(shards)));
  for (int step = 0; step < shape.steps; ++step) {
    for (int i = 0; i < m; ++i) {
      const int micro_batch = step * m + i;
      const bool updates = i == m - 1;
      auto visit = [&](int shard, bool forward, bool backward) {
        order.push_back({WorkKind::PROMOTE, -1, shard, step, step});
        if (forward) order.push_back({WorkKind::FORWARD, micro_batch, shard, step, step});
        if (backward) {
          order.push_back({WorkKind::BACKWARD, micro_batch, shard, step, step});
          if (updates) order.push_back({WorkKind::OPTIMIZER_STEP, -1, shard, step, step + 1});
        }
        // The shard leaves the GPU in the version it now has.
        order.push_back({WorkKind::DEMOTE, -1, shard, step, backward && updates ? step + 1 : step});
      };
      for (int shard = 0; shard < shards - 1; ++shard) visit(shard, true, false);
      visit(shards - 1, true, true);
      for (int shard = shards - 2; shard >= 0; --shard) visit(shard, false, true);
    }
  }
  return PipelineSchedule{order};
}

}  // namespace trainsim::sim
