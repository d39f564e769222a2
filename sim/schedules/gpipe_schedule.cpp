// GPipe (Huang et al., NeurIPS 2019, Fig. 2c; torchgpipe): each stage runs the forwards of a step's
// m micro-batches in micro-batch order, then their backwards in reverse micro-batch order, then
// steps its optimizer: the flush, after which the next step's fill begins.
//
// Reverse order is GPipe's figure and autograd's (the last micro-batch turns around first, its
// activations the freshest on the last stage). torch.distributed.pipelining's ScheduleGPipe runs
// the backwards in micro-batch order instead; with uniform costs both end a step after
// (m + p - 1)(t_f + t_b), so the choice only decides which activations are freed first.
// Every stage holds all m activations before its first backward: in flight m.

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

PipelineSchedule gpipe_schedule(const PipelineShape& shape) {
  check_shape(wl::Schedule::GPIPE, shape);
  const int m = shape.micro_batches;
  StageSchedule order;
  order.reserve(static_cast<std::size_t>(shape.steps) * (2 * static_cast<std::size_t>(m) + 1));
  for (int step = 0; step < shape.steps; ++step) {
    const int first = step * m;
    for (int i = 0; i < m; ++i) order.push_back({WorkKind::FORWARD, first + i, 0, step, step});
    for (int i = m - 1; i >= 0; --i) order.push_back({WorkKind::BACKWARD, first + i, 0, step, step});
    order.push_back({WorkKind::OPTIMIZER_STEP, -1, 0, step, step + 1});
  }
  // Every stage runs the same order; only the data it waits for differs.
  return PipelineSchedule(static_cast<std::size_t>(shape.stages), order);
}

}  // namespace trainsim::sim
