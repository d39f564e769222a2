// The host's dispatch of kernels (calibration.host_dispatch, replayed on each rank's host stream
// by lowering/interpreter.cpp) delays the GPU but is not GPU work: a GPU waiting for its host is
// idle (sim/engine/metrics.cpp). The same DDP step with and without the calibration runs the same
// kernels, so its GPU compute is the same, while the step with dispatch is longer (host-bound).
// Before, the dispatch ops counted as the GPU's compute, and a host-bound pipeline stage that
// waited for its neighbour while its host issued ahead looked busy (reports/validation).
#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

// A small gpt2-1.5b step on 2 GPUs of `p` (sequences of 128, bf16) under `kind`, laid out by
// `layout`.
SimResult small_step(const hw::ClusterProfile& p, wl::StackKind kind, const std::function<void(wl::StrategyInput&)>& layout) {
  wl::StrategyInput in;
  in.gpus.set(2, "t");
  in.micro_batch.set(1, "t");
  in.seq.set(128, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  layout(in);
  wl::TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {p.gpus_per_node(), p.node_count, p.name});
  return simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()));
}

SimResult ddp_step(const hw::ClusterProfile& p) {
  return small_step(p, wl::StackKind::PYTORCH_DDP, [](wl::StrategyInput& in) { in.dp.set(2, "t"); });
}

// A torch.distributed.pipelining step of 2 stages, small enough to be bound by its hosts.
SimResult pipeline_step(const hw::ClusterProfile& p) {
  return small_step(p, wl::StackKind::PYTORCH_PIPELINING, [](wl::StrategyInput& in) {
    in.pp.set(2, "t");
    in.schedule.set(wl::Schedule::ONE_F_ONE_B, "t");
    in.global_batch.set(4, "t");
  });
}

// The calibrated H200 profile without the interference table (whose slowdown of kernels beside
// NCCL would change with what overlaps once dispatch spreads the kernels out), with its stacks'
// host dispatch and without (the GPU's own gap between queued kernels, gpu_kernel_us, kept in both:
// it is GPU time, CostModel::launch_gap_seconds).
std::pair<hw::ClusterProfile, hw::ClusterProfile> with_and_without_dispatch() {
  hw::ClusterProfile with = hw::builtin_profile("h200x4-measured");
  with.calibration.interference.reset();
  hw::ClusterProfile without = with;
  without.calibration.host_dispatch->stacks.clear();
  return {with, without};
}

TEST(HostDispatch, TheGpuWaitingForItsHostIsIdleNotComputing) {
  const auto [with, without] = with_and_without_dispatch();
  ASSERT_TRUE(with.calibration.host_dispatch.has_value());
  const SimResult a = ddp_step(with), b = ddp_step(without);
  ASSERT_TRUE(a.simulated && b.simulated);
  // Small sequences: the host issues kernels slower than the GPU runs them.
  EXPECT_GT(a.step_time_s, 1.2 * b.step_time_s);
  EXPECT_NEAR(a.per_gpu.front().compute_s, b.per_gpu.front().compute_s, 1e-9 * b.per_gpu.front().compute_s);
  EXPECT_GT(a.per_gpu.front().idle_s, b.per_gpu.front().idle_s);
}

// Busy as CUDA events around the stack's calls count it (GpuBusy::call_span_*, what validate
// compares with a run whose busy.definition is "call_spans"): the GPU waiting inside a call for
// its host is busy there. Without host dispatch a call's kernels follow each other, so the calls'
// spans are the kernels' time; with it the spans hold the waits for the host as well.
TEST(HostDispatch, CallSpansHoldTheGpusWaitsForItsHostInsideACall) {
  const auto [with, without] = with_and_without_dispatch();
  ASSERT_TRUE(with.calibration.host_dispatch.has_value());
  const SimResult a = pipeline_step(with), b = pipeline_step(without);
  ASSERT_TRUE(a.simulated && b.simulated);
  for (const GpuResult& g : b.per_gpu) {
    EXPECT_NEAR(g.call_span_compute_s, g.compute_s, 1e-9 * g.compute_s) << "stage " << g.stage;
    EXPECT_NEAR(g.call_span_optimizer_s, g.optimizer_s, 1e-9 * g.optimizer_s) << "stage " << g.stage;
  }
  for (const GpuResult& g : a.per_gpu) {
    // Host-bound: the calls span more than twice their kernels, and no more than the step.
    EXPECT_GT(g.call_span_compute_s, 2 * g.compute_s) << "stage " << g.stage;
    EXPECT_LE(g.call_span_compute_s + g.call_span_optimizer_s, a.step_time_s * (1 + 1e-9));
    EXPECT_GE(g.call_span_optimizer_s, 0.0);
  }
}

}  // namespace
}  // namespace trainsim::sim
