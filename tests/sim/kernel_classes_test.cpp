// GPU kernel time by class in the replay (metrics.hpp, GpuBusy::*_kernel_s), which `trainsim
// validate` sets against a profiler trace's kernels: the GEMMs' share from the FLOPs of Narayanan
// et al. 2021 (Sec. 5.1) at the rate an uncalibrated profile assumes, and the classes adding up to
// the compute the GPU did.
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

SimResult zero2_on_dgx2(wl::Strategy* out) {
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  wl::StrategyInput in;
  in.zero.set(2, "t");
  in.micro_batch.set(2, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {16, 96, "dgx2"});
  *out = r.strategy;
  return simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, 16));
}

// dgx2 has no GEMM table: every GEMM runs at 70% of the fp16 peak (cost_model.hpp). A step's GEMMs
// other than attention's are 72 B s l h^2 (the layers' four, forward and backward) plus 6 B s h V
// (the logits, forward and backward) FLOPs: Narayanan's count without its s/(6h) attention term.
TEST(KernelClasses, GemmTimeIsTheGemmFlopsAtTheProfilesRate) {
  wl::Strategy s;
  const SimResult r = zero2_on_dgx2(&s);
  ASSERT_TRUE(r.simulated);
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  const double b = static_cast<double>(s.global_batch) / s.dp, sq = 1024, l = 48, h = 1600, V = 50257;
  const double flops = 72 * b * sq * l * h * h + 6 * b * sq * h * V;
  const double expected = flops / (0.7 * p.gpu.peak_TFLOPs.at(hw::ComputePrecision::FP16) * 1e12);
  for (const GpuResult& g : r.per_gpu) EXPECT_NEAR(g.gemm_kernel_s, expected, 1e-6 * expected);
}

// Compute runs one op at a time on the compute stream here, so its busy time is the ops' summed
// time: GEMMs, attention and the other kernels must add up to it, each counted once.
TEST(KernelClasses, ClassesAddUpToTheComputeTime) {
  wl::Strategy s;
  const SimResult r = zero2_on_dgx2(&s);
  ASSERT_TRUE(r.simulated);
  for (const GpuResult& g : r.per_gpu) {
    EXPECT_GT(g.attention_kernel_s, 0);
    EXPECT_GT(g.other_kernel_s, 0);
    EXPECT_NEAR(g.gemm_kernel_s + g.attention_kernel_s + g.other_kernel_s, g.compute_s, 1e-9 * g.compute_s);
    EXPECT_NEAR(g.optimizer_kernel_s, g.optimizer_s, 1e-9 * g.compute_s);
  }
}

}  // namespace
}  // namespace trainsim::sim
