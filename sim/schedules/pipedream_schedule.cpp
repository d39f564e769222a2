// PipeDream (Narayanan et al., SOSP'19 Sec. 3.2-3.3; msr-fiddle/pipedream runtime): asynchronous
// 1F1B with no flush. Over the whole run of steps x m micro-batches, stage s runs
// p - s - 1 warm-up forwards once, then strictly alternates one forward and one backward, and
// only the run's end drains the pipeline. Every backward is followed by an optimizer step: each
// micro-batch updates the weights of its stage.
//
// Weight stashing: a forward computes with the newest version of its stage at that moment and
// its backward with the same, stashed version, so a micro-batch's gradient matches the weights
// that produced its activations. On stage s the forward of micro-batch k follows k - (p - s - 1)
// updates, hence version max(0, k - p + s + 1); p - s versions are alive in the steady state
// (the runtime keeps num_warmup_minibatches + 1), the last stage 1. `step` only labels
// micro-batch k with k / m: PipeDream has no step boundary.
//
// p = 4, stage 0: F0 F1 F2 | F3 B0 U1 F4 B1 U2 F5 ... (F4 computes with version 1, F5 with 2).

#include <algorithm>

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

PipelineSchedule pipedream_schedule(const PipelineShape& shape) {
  check_shape(wl::Schedule::PIPEDREAM, shape);
  const int p = shape.stages;
  const int m = shape.micro_batches;
  const int total = m * shape.steps;
  PipelineSchedule schedule(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    const std::vector<OrderedPass> order = one_f_one_b_order(std::min(p - s - 1, total), total);
    StageSchedule& stage = schedule[static_cast<std::size_t>(s)];
    stage.reserve(order.size() + static_cast<std::size_t>(total));
    std::vector<int> stashed(static_cast<std::size_t>(total), 0);
    int newest = 0;
    for (const OrderedPass& pass : order) {
      const int k = pass.index;
      int& version = stashed[static_cast<std::size_t>(k)];
      if (pass.kind == WorkKind::FORWARD) version = newest;
      stage.push_back({pass.kind, k, 0, k / m, version});
      if (pass.kind == WorkKind::BACKWARD) stage.push_back({WorkKind::OPTIMIZER_STEP, -1, 0, k / m, ++newest});
    }
  }
  return schedule;
}

}  // namespace trainsim::sim
