// 1F1B with a flush (PipeDream-Flush, Narayanan et al. ICML'21), as Megatron-LM's
// forward_backward_pipelining_without_interleaving runs it: stage s (0-based) of p runs
// min(p - s - 1, m) warm-up forwards, then pairs of one forward and one backward (forward first)
// until the step's forwards are done, then the remaining backwards, then its optimizer step.
// Micro-batches enter and leave in micro-batch order.
//
// The warm-up fills the pipeline just enough that the last stage can start its first backward as
// soon as its first forward ends; after that each stage frees an activation for every one it
// makes, so it holds min(m, p - s) at once instead of GPipe's m, at the same bubble
// (p - 1) / (m + p - 1).
//
// p = 4, m = 8, stage 0: F0 F1 F2 | F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 | B5 B6 B7 | step
//                stage 3:          F0 B0 F1 B1 ... F7 B7 | step

#include <algorithm>

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

PipelineSchedule one_f_one_b_schedule(const PipelineShape& shape) {
  check_shape(wl::Schedule::ONE_F_ONE_B, shape);
  const int p = shape.stages;
  const int m = shape.micro_batches;
  PipelineSchedule schedule(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    const std::vector<OrderedPass> order = one_f_one_b_order(std::min(p - s - 1, m), m);
    StageSchedule& stage = schedule[static_cast<std::size_t>(s)];
    stage.reserve(static_cast<std::size_t>(shape.steps) * (order.size() + 1));
    for (int step = 0; step < shape.steps; ++step) {
      for (const OrderedPass& pass : order) stage.push_back({pass.kind, step * m + pass.index, 0, step, step});
      stage.push_back({WorkKind::OPTIMIZER_STEP, -1, 0, step, step + 1});
    }
  }
  return schedule;
}

}  // namespace trainsim::sim
