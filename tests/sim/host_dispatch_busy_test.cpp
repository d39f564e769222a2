// The host's dispatch of kernels (calibration.host_dispatch, replayed on each rank's host stream
// by lowering/interpreter.cpp) delays the GPU but is not GPU work: a GPU waiting for its host is
// idle (sim/metrics.cpp). The same DDP step with and without the calibration runs the same
// kernels, so its GPU compute is the same, while the step with dispatch is longer (host-bound).
// Before, the dispatch ops counted as the GPU's compute, and a host-bound pipeline stage that
// waited for its neighbour while its host issued ahead looked busy (reports/validation).
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

SimResult ddp_step(const hw::ClusterProfile& p) {
  wl::StrategyInput in;
  in.gpus.set(2, "t");
  in.dp.set(2, "t");
  in.micro_batch.set(1, "t");
  in.seq.set(128, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  wl::TrainingStack stack;
  stack.kind = wl::StackKind::PYTORCH_DDP;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {p.gpus_per_node(), p.node_count, p.name});
  return simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()));
}

TEST(HostDispatch, TheGpuWaitingForItsHostIsIdleNotComputing) {
  // Without the interference table, whose slowdown of kernels beside NCCL would change with
  // what overlaps once dispatch spreads the kernels out.
  hw::ClusterProfile with = hw::builtin_profile("h200x4-measured");
  with.calibration.interference.reset();
  ASSERT_TRUE(with.calibration.host_dispatch.has_value());
  hw::ClusterProfile without = with;
  without.calibration.host_dispatch.reset();
  const SimResult a = ddp_step(with), b = ddp_step(without);
  ASSERT_TRUE(a.simulated && b.simulated);
  // Small sequences: the host issues kernels slower than the GPU runs them.
  EXPECT_GT(a.step_time_s, 1.2 * b.step_time_s);
  EXPECT_NEAR(a.per_gpu.front().compute_s, b.per_gpu.front().compute_s, 1e-9 * b.per_gpu.front().compute_s);
  EXPECT_GT(a.per_gpu.front().idle_s, b.per_gpu.front().idle_s);
}

}  // namespace
}  // namespace trainsim::sim
