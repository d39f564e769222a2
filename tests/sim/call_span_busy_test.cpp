// Busy as CUDA events around a stack's calls count it (sim/engine/metrics.cpp, GpuBusy::call_span_*;
// reports/validation/README.md, "The pipeline bubble"): each call from the moment its start event
// passes the compute stream (its host starting to issue it, or the stream's earlier work and the
// waits queued before it ending, whichever is later) to its last kernel's end. A hand-timed graph
// of one GPU: kernels, their host dispatch, a receive, an optimizer step.
#include <gtest/gtest.h>

#include "metrics.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {
namespace {

// Built through GraphBuilder (which adds each stream's order, already among the dependencies
// below) as the interpreter builds graphs.
struct Toy {
  GraphBuilder b{1};
  ReplayResult r;
  const TaskGraph& g = b.graph();
  OpId add(OpKind kind, Stream stream, Category cat, int action, double start, double end, const std::vector<OpId>& deps = {}) {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.category = cat;
    op.gpu = 0;
    op.action = action;
    const OpId id = b.add(std::move(op), deps);
    r.timing.push_back({start, end});
    return id;
  }
};

TEST(CallSpanBusy, ACallIsBusyFromItsDispatchOrItsWaitsToItsLastKernel) {
  Toy t;
  // Call 0, a forward of two kernels, host-bound: the host issues kernel 1 over [0, 2] and
  // kernel 2 over [2, 5]; the GPU runs them at [2, 3] and [5, 6] and waits for the host between.
  const OpId h1 = t.add(OpKind::DELAY, Stream::HOST, Category::COMPUTE, 0, 0, 2);
  const OpId k1 = t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, 0, 2, 3, {h1});
  const OpId h2 = t.add(OpKind::DELAY, Stream::HOST, Category::COMPUTE, 0, 2, 5, {h1});
  const OpId k2 = t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, 0, 5, 6, {h2, k1});
  // Call 1, a backward the host issues at [5, 6], queued behind a receive that ends at 9.
  const OpId recv = t.add(OpKind::DELAY, Stream::NODE, Category::COMMUNICATION, -1, 6, 9);
  const OpId h3 = t.add(OpKind::DELAY, Stream::HOST, Category::COMPUTE, 1, 5, 6, {h2});
  const OpId k3 = t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, 1, 9, 10, {h3, k2, recv});
  // Call 2, the optimizer step, issued at [6, 7], after the backward on the stream.
  const OpId h4 = t.add(OpKind::DELAY, Stream::HOST, Category::COMPUTE, 2, 6, 7, {h3});
  t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::OPTIMIZER, 2, 10, 11, {h4, k3});
  t.r.makespan = 11;

  const GpuBusy b = gpu_busy(t.g, t.r, 1, 0, 11).front();
  // Kernels: 3 of compute, 1 of optimizer; the host's dispatch is not GPU work.
  EXPECT_DOUBLE_EQ(b.compute_s, 3);
  EXPECT_DOUBLE_EQ(b.optimizer_s, 1);
  // Calls: [0, 6] (the GPU's wait for its host inside the call counts), [9, 10] (the wait for
  // the receive before it does not), and the optimizer's [10, 11].
  EXPECT_DOUBLE_EQ(b.call_span_compute_s, 7);
  EXPECT_DOUBLE_EQ(b.call_span_optimizer_s, 1);
  // Clipped to the window like the rest.
  const GpuBusy c = gpu_busy(t.g, t.r, 1, 1, 9.5).front();
  EXPECT_DOUBLE_EQ(c.call_span_compute_s, 5.5);
  EXPECT_DOUBLE_EQ(c.call_span_optimizer_s, 0);
}

TEST(CallSpanBusy, WithoutHostDispatchACallSpansItsKernels) {
  Toy t;
  t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, 0, 1, 2);
  t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, 0, 2, 4, {0});
  t.add(OpKind::COMPUTE, Stream::COMPUTE, Category::COMPUTE, 1, 6, 7, {1});
  t.r.makespan = 7;
  const GpuBusy b = gpu_busy(t.g, t.r, 1, 0, 7).front();
  EXPECT_DOUBLE_EQ(b.compute_s, 4);
  EXPECT_DOUBLE_EQ(b.call_span_compute_s, 4);
}

}  // namespace
}  // namespace trainsim::sim
