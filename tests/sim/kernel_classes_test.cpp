// GPU kernel time by class in the replay (metrics.hpp, GpuBusy::*_kernel_s), which `trainsim
// validate` sets against a profiler trace's kernels: on a profile without a GEMM table or flash
// attention every GEMM, materialized attention's batched products among them, runs at the assumed
// 70% of peak, so the GEMM class is the FLOPs of Narayanan et al. 2021 (Sec. 5.1) at that rate,
// with and without tensor parallelism; with calibrated flash attention, attention has a class of its own.
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::sim {
namespace {

struct Replayed {
  wl::ModelSpec model;
  wl::Strategy strategy;
  SimResult result;
};

Replayed replay(const wl::ModelSpec& m, const char* hw, int gpus, int tp) {
  const hw::ClusterProfile p = hw::builtin_profile(hw);
  wl::StrategyInput in;
  in.zero.set(2, "t");
  in.micro_batch.set(1, "t");
  if (tp > 1) in.tp.set(tp, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, m, {gpus, 96, hw});
  return {r.model, r.strategy, simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, gpus))};
}

// One step's GEMM FLOPs per GPU: 72 B s l h^2 (1 + s/(6h)) + 6 B s h V over all GPUs of a
// data-parallel replica (Narayanan's count, the logits' 6 B s h V included), split by tp.
double gemm_flops_per_gpu(const Replayed& r) {
  const double B = static_cast<double>(r.strategy.global_batch) / r.strategy.dp, sq = static_cast<double>(r.strategy.seq);
  const double l = static_cast<double>(r.model.layers), h = static_cast<double>(r.model.hidden), V = static_cast<double>(r.model.vocab);
  return (72 * B * sq * l * h * h * (1 + sq / (6 * h)) + 6 * B * sq * h * V) / r.strategy.tp;
}

void expect_gemm_time_from_flops(const Replayed& r) {
  ASSERT_TRUE(r.result.simulated);
  const double rate = 0.7 * hw::builtin_profile("dgx2").gpu.peak_TFLOPs.at(hw::ComputePrecision::FP16) * 1e12;
  const double expected = gemm_flops_per_gpu(r) / rate;
  for (const GpuResult& g : r.result.per_gpu) {
    EXPECT_NEAR(g.gemm_kernel_s, expected, 1e-6 * expected);
    EXPECT_EQ(g.attention_kernel_s, 0);  // no flash attention: its products are GEMMs, its softmax other
    EXPECT_GT(g.other_kernel_s, 0);
    EXPECT_LE(g.gemm_kernel_s, g.compute_s * (1 + 1e-9));
  }
}

// Four heads, so that attention's batched products (k = h/4, several hundred) are bound by their
// FLOPs like the other GEMMs, not by their traffic (at 70% of the V100's fp16 peak and 80% of its
// HBM bandwidth a product needs about 120 FLOPs a byte; Q K^T at s = 1024, d = 400 has about 220).
wl::ModelSpec four_heads(const char* name) {
  wl::ModelSpec m = wl::builtin_model(name);
  m.heads = 4;
  m.kv_heads = 4;  // no grouped-query attention
  return m;
}

TEST(KernelClasses, GemmTimeIsTheGemmFlopsAtTheProfilesRate) {
  expect_gemm_time_from_flops(replay(four_heads("gpt2-1.5b"), "dgx2", 16, 1));
}

// Tensor parallelism cuts each layer into an attention and an MLP segment (unit_costs.cpp): both
// carry their GEMMs, and every GPU does a tp-th of the replica's.
TEST(KernelClasses, GemmTimeUnderTensorParallelism) {
  expect_gemm_time_from_flops(replay(four_heads("megatron-8.3b"), "dgx2", 16, 2));
}

// With the calibrated flash attention of a measured profile, attention is a class of its own and
// the three classes stay within the compute the GPU did.
TEST(KernelClasses, FlashAttentionIsAClassOfItsOwn) {
  const wl::ModelSpec llama = wl::load_model_file(
      test::source_path("reports/validation/measured/llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2.model.json"));
  const Replayed r = replay(llama, "h200x4-measured", 4, 1);
  ASSERT_TRUE(r.result.simulated);
  for (const GpuResult& g : r.result.per_gpu) {
    EXPECT_GT(g.attention_kernel_s, 0);
    EXPECT_GT(g.gemm_kernel_s, 3 * g.attention_kernel_s);  // at sequence 2048 and hidden 4096
    EXPECT_GT(g.other_kernel_s, 0);
  }
}

}  // namespace
}  // namespace trainsim::sim
