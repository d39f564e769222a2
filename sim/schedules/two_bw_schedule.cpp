// PipeDream-2BW (Narayanan et al., ICML'21 Sec. 3.1): 1F1B with no flush across steps. Over the
// whole run of steps x m micro-batches, stage s runs min(p - s - 1, steps x m) warm-up forwards
// once, then alternates one forward and one backward, and only the run's end drains the pipeline.
// Gradients are coalesced over a step's m micro-batches: each stage steps its optimizer once per
// step, right after the backward of that step's last micro-batch.
//
// Double-buffered weights with one step of delay, W(t+1) = W(t) - lr * grad f(W(t-1)): micro-batch
// k of step t = k / m runs its forward and its backward with version max(t - 1, 0), the one the
// stage made after step t - 2 (steps 0 and 1 both use the initial weights). The update of step t
// makes version t + 1 from version t while step t + 1's micro-batches still compute with version
// t, so at most two versions are alive per stage. That version exists in time only if m >= p - 1
// (the 1F1B order runs step t - 2's last backward before step t's first forward); we require
// m >= p.
//
// p = 4, m = 4, stage 0: F0 F1 F2 | F3 B0 F4 B1 F5 B2 F6 B3 U1 F7 B4 ... (F0-F7 version 0,
// F8-F11 version 1).

#include <algorithm>

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

PipelineSchedule two_bw_schedule(const PipelineShape& shape) {
  check_shape(wl::Schedule::TWO_BW, shape);
  const int p = shape.stages;
  const int m = shape.micro_batches;
  const int total = m * shape.steps;
  PipelineSchedule schedule(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    const std::vector<OrderedPass> order = one_f_one_b_order(std::min(p - s - 1, total), total);
    StageSchedule& stage = schedule[static_cast<std::size_t>(s)];
    stage.reserve(order.size() + static_cast<std::size_t>(shape.steps));
    for (const OrderedPass& pass : order) {
      const int k = pass.index;
      const int step = k / m;
      stage.push_back({pass.kind, k, 0, step, std::max(step - 1, 0)});
      if (pass.kind == WorkKind::BACKWARD && k % m == m - 1)
        stage.push_back({WorkKind::OPTIMIZER_STEP, -1, 0, step, step + 1});
    }
  }
  return schedule;
}

}  // namespace trainsim::sim
