// The GPU's gaps between a PyTorch layer's queued kernels (CostModel::launch_gap_seconds;
// workloads/training_stacks.md, "Kernels a layer launches") reach the replay as compute time of the
// layers' ops and stay out of the kernel classes that `trainsim validate` sets against a trace's
// kernel durations: the same DDP step with and without the profile's gpu_kernel_us computes longer
// by the layers' gaps, with the same GEMM, attention and other-kernel time.
#include <gtest/gtest.h>

#include "cost_model.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "stack_layer.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

struct Step {
  wl::ModelSpec model;
  wl::Strategy strategy;
  SimResult result;
};

// gpt2-1.5b under DDP on 2 GPUs, sequences of 1024, 2 micro-batches of 1 a rank.
Step ddp_step(const hw::ClusterProfile& p) {
  wl::StrategyInput in;
  in.gpus.set(2, "t");
  in.dp.set(2, "t");
  in.micro_batch.set(1, "t");
  in.global_batch.set(4, "t");
  in.seq.set(1024, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  wl::TrainingStack stack;
  stack.kind = wl::StackKind::PYTORCH_DDP;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {p.gpus_per_node(), p.node_count, p.name});
  return {r.model, r.strategy, simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()))};
}

TEST(LaunchGaps, AreComputeTimeOfTheLayersInNoKernelClass) {
  // The calibrated H200 profile without the interference table (its slowdown of compute beside the
  // all-reduces would scale the gaps too) and without the stacks' host dispatch (the GPU sets the pace).
  hw::ClusterProfile with = hw::builtin_profile("h200x4-measured");
  with.calibration.interference.reset();
  with.calibration.host_dispatch->stacks.clear();
  ASSERT_TRUE(with.calibration.host_dispatch->gpu_kernel_us);
  hw::ClusterProfile without = with;
  without.calibration.host_dispatch->gpu_kernel_us.reset();
  const Step a = ddp_step(with), b = ddp_step(without);
  ASSERT_TRUE(a.result.simulated && b.result.simulated);
  ASSERT_EQ(a.strategy.micro_batches(), 2);
  const CostModel costs(with, a.model.numerics, a.strategy.stack);
  const wl::LayerCost layer = wl::torch_layer_cost(a.model, a.strategy);
  const double per_layer = costs.launch_gap_seconds(layer.forward) + costs.launch_gap_seconds(layer.backward);
  ASSERT_GT(per_layer, 0);
  const double gaps = per_layer * static_cast<double>(a.model.layers) * a.strategy.micro_batches();
  const GpuResult& g = a.result.per_gpu.front();
  const GpuResult& h = b.result.per_gpu.front();
  EXPECT_NEAR(g.compute_s - h.compute_s, gaps, 1e-6 * g.compute_s);
  EXPECT_NEAR(g.gemm_kernel_s, h.gemm_kernel_s, 1e-9 * h.gemm_kernel_s);
  EXPECT_NEAR(g.attention_kernel_s, h.attention_kernel_s, 1e-9 * h.attention_kernel_s + 1e-12);
  EXPECT_NEAR(g.other_kernel_s, h.other_kernel_s, 1e-6 * h.other_kernel_s);
  EXPECT_GT(a.result.step_time_s, b.result.step_time_s);
}

}  // namespace
}  // namespace trainsim::sim
