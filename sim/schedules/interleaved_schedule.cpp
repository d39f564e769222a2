// Megatron-LM's interleaved 1F1B (Narayanan et al., SC'21 Sec. 2.2;
// forward_backward_pipelining_with_interleaving): each stage holds v model chunks, chunk c of
// stage s being virtual stage c * p + s. A stage runs m * v passes of each kind, numbered k;
// pass k belongs to micro-batch (k / (p v)) * p + k % p and, by get_model_chunk_id, to chunk
// (k % (p v)) / p for a forward and v - 1 - that for a backward: groups of p micro-batches go
// through the chunks in ascending order forwards and descending order backwards. The order is
// 1F1B over these passes with Megatron's warm-up (p - s - 1) * 2 + (v - 1) * p (at most m * v),
// then the stage steps each chunk's optimizer.
//
// The warm-up is the newer Megatron-core one (get_pp_rank_microbatches, with the default group
// of p micro-batches per chunk); Megatron's 2022 schedules.py ran every forward first when m == p,
// which we do not. m must be a multiple of p, as Megatron asserts. With uniform costs t_f / v and
// t_b / v per chunk a step takes (m + (p - 1) / v)(t_f + t_b): the bubble divided by v, at the
// price of v times the point-to-point messages.
//
// p = 4, m = 8, v = 2 (F<mb>.<chunk>), stage 0, warm-up 10:
//   F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 | F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1
//   F6.1 B0.0 F7.1 B1.0 | B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0 | steps
// stage 3, warm-up 4: F0.0 F1.0 F2.0 F3.0 | F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0
//   F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 | B4.0 B5.0 B6.0 B7.0

#include <algorithm>

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

int interleaved_warmup(const PipelineShape& shape, int stage) {
  const int p = shape.stages;
  const int v = shape.chunks;
  return std::min((p - stage - 1) * 2 + (v - 1) * p, shape.micro_batches * v);
}

PipelineSchedule interleaved_schedule(const PipelineShape& shape) {
  check_shape(wl::Schedule::INTERLEAVED, shape);
  const int p = shape.stages;
  const int m = shape.micro_batches;
  const int v = shape.chunks;
  const int group = p * v;
  PipelineSchedule schedule(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    const std::vector<OrderedPass> order = one_f_one_b_order(interleaved_warmup(shape, s), m * v);
    StageSchedule& stage = schedule[static_cast<std::size_t>(s)];
    stage.reserve(static_cast<std::size_t>(shape.steps) * (order.size() + static_cast<std::size_t>(v)));
    for (int step = 0; step < shape.steps; ++step) {
      for (const OrderedPass& pass : order) {
        const int k = pass.index;
        const int micro_batch = step * m + (k / group) * p + k % p;
        const int forward_chunk = (k % group) / p;
        const int chunk = pass.kind == WorkKind::FORWARD ? forward_chunk : v - 1 - forward_chunk;
        stage.push_back({pass.kind, micro_batch, chunk, step, step});
      }
      for (int c = 0; c < v; ++c) stage.push_back({WorkKind::OPTIMIZER_STEP, -1, c, step, step + 1});
    }
  }
  return schedule;
}

}  // namespace trainsim::sim
