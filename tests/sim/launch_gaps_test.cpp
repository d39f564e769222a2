// The GPU's gaps between a PyTorch layer's queued kernels (CostModel::launch_gap_seconds;
// workloads/stacks/training_stacks.md, "Kernels a layer launches") reach the replay as compute time of the
// layers' ops and stay out of the kernel classes that `trainsim validate` sets against a trace's
// kernel durations: the same DDP step with and without the profile's gpu_kernel_us computes longer
// by the layers' gaps, with the same GEMM, attention and other-kernel time.
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
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

// The gaps by hand, for GPT-2 1.5B's layer under autocast DDP with two micro-batches (the launches
// as tests/workloads/stack_layer_test.cpp counts them from the rows' traces; the costed entries,
// whose curves already hold one gap each, from workloads/stacks/stack_layer.cpp's kernel lists):
// - forward: 20 launches (flash attention's 1, 4 GEMMs, autocast's 4 weight, 4 bias and 2 norm-output
//   casts, 2 residual adds, 2 norms, GELU); 5 of them costed entries (norm, norm-output cast,
//   residual add, GELU, weight cast): 15 gaps;
// - backward: 35 launches, and from the second micro-batch on an AccumulateGrad add for each of the
//   layer's 12 parameter tensors, 41 on the mean of the two (the traces' 35 and 47); 13 of them
//   costed entries (residual-gradient cast, residual add, norm backward, norm-gradient cast, the
//   reshape copy, GELU's backward, the QKV cat, 4 bias reductions, the weight-gradient cast, the
//   AccumulateGrad add): 28 gaps.
// 43 gaps a layer a micro-batch, 48 layers, 2 micro-batches: 4,128 gaps, at 2 us each 8.256 ms.
TEST(LaunchGaps, AreComputeTimeOfTheLayersInNoKernelClass) {
  // The calibrated H200 profile without the interference table (its slowdown of compute beside the
  // all-reduces would scale the gaps too) and without the stacks' host dispatch (the GPU sets the pace),
  // its gap between queued kernels set to 2 us.
  hw::ClusterProfile with = hw::builtin_profile("h200x4-measured");
  with.calibration.interference.reset();
  with.calibration.host_dispatch->stacks.clear();
  ASSERT_TRUE(with.calibration.host_dispatch->gpu_kernel_us);
  with.calibration.host_dispatch->gpu_kernel_us = 2.0;
  hw::ClusterProfile without = with;
  without.calibration.host_dispatch->gpu_kernel_us.reset();
  const Step a = ddp_step(with), b = ddp_step(without);
  ASSERT_TRUE(a.result.simulated && b.result.simulated);
  ASSERT_EQ(a.strategy.micro_batches(), 2);
  ASSERT_EQ(a.model.layers, 48);
  constexpr double GAPS_S = 4128 * 2e-6;
  const GpuResult& g = a.result.per_gpu.front();
  const GpuResult& h = b.result.per_gpu.front();
  EXPECT_NEAR(g.compute_s - h.compute_s, GAPS_S, 1e-6 * g.compute_s);
  EXPECT_NEAR(g.gemm_kernel_s, h.gemm_kernel_s, 1e-9 * h.gemm_kernel_s);
  EXPECT_NEAR(g.attention_kernel_s, h.attention_kernel_s, 1e-9 * h.attention_kernel_s + 1e-12);
  EXPECT_NEAR(g.other_kernel_s, h.other_kernel_s, 1e-6 * h.other_kernel_s);
  EXPECT_GT(a.result.step_time_s, b.result.step_time_s);
}

}  // namespace
}  // namespace trainsim::sim
