// The trainsim-reference stack against the reference step's own arena: the arena is allocated
// once, so its peak is the sum of its buffers, and the memory model must count every one of them
// (workloads/stacks/training_stacks.md, "trainsim-reference"). Measured peaks are the committed rows'
// peak_allocated_bytes (reports/validation/reference/), which are the arena sizes themselves.

#include "reference_stack.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "training_stack.hpp"

namespace trainsim::wl {
namespace {

ModelSpec row_model(const std::string& row) {
  return load_model_file(std::string(TRAINSIM_SOURCE_DIR) + "/reports/validation/reference/" + row + ".model.json");
}

Strategy reference(int gpus, int zero, int micro_batch, int micro_batches) {
  Strategy s;
  s.gpus = gpus;
  s.dp = gpus;
  s.zero_stage = zero;
  s.micro_batch = micro_batch;
  s.global_batch = micro_batch * micro_batches * gpus;
  s.seq = 2048;
  s.stack.kind = StackKind::TRAINSIM_REFERENCE;
  return s;
}

TEST(ReferenceStack, SingleGpuArenaIsEveryBuffer) {
  const ModelSpec m = row_model("h200x2/h200x1_ref-single_L24-h1024_mb4x2");
  const MemoryEstimate est = estimate_memory(m, reference(1, 0, 4, 2), 8);
  // The row's peak_allocated_bytes (the arena) is 28.85 GiB; what is not counted is 256-byte
  // alignment and unit padding.
  const double measured = 28.85 * 1073741824.0;
  EXPECT_NEAR(est.stages[0].gpu_bytes() / measured, 1.0, 0.005);
}

TEST(ReferenceStack, ZeroThreeKeepsNoSixteenBitShard) {
  const ModelSpec m = row_model("h200x2/h200x2_ref-zero3_L24-h1024_mb4x2");
  const StageMemory st = estimate_memory(m, reference(2, 3, 4, 2), 8).stages[0];
  EXPECT_EQ(st.params_at.gpu, 0.0);
  EXPECT_DOUBLE_EQ(st.optimizer_at.gpu, 12.0 * std::ceil(st.params_on_rank / 2));
  EXPECT_DOUBLE_EQ(st.grads_at.gpu, 4.0 * std::ceil(st.params_on_rank / 2));
  EXPECT_EQ(stack_states(Strategy{}.stack, Numerics::BF16_MIXED, 3, 1).keeps_param_shard, true);
}

TEST(ReferenceStack, RecomputeKeepsOnlyLayerOutputs) {
  const ModelSpec m = row_model("h200x2/h200x2_ref-zero3_L24-h1024_mb4x2");
  Strategy s = reference(2, 3, 4, 2);
  const ReferenceActivations none = reference_activations(m, s);
  s.recompute = Recompute::FULL;
  const ReferenceActivations ckpt = reference_activations(m, s);
  EXPECT_DOUBLE_EQ(ckpt.stored, 4.0 * 4 * 2048 * 1024);  // fp32 [T, h]
  EXPECT_DOUBLE_EQ(ckpt.full, none.full);
  EXPECT_DOUBLE_EQ(none.stored, none.full);
}

TEST(ReferenceStack, MaterializedScoresAreCountedInFp32) {
  const ModelSpec m = row_model("h200x2/h200x1_ref-single_L24-h1024_mb4x2");
  const Strategy s = reference(1, 0, 4, 2);
  const LayerCost c = reference_layer_cost(m, s);
  const double sq = 4.0 * 16 * 2048 * 2048;
  double fwd_scores = 0;
  for (const auto& k : c.forward.kernels) {
    if (std::string(k.name) == "fp32_scores" || std::string(k.name) == "ref:causal_softmax_fwd") fwd_scores += k.bytes;
  }
  EXPECT_DOUBLE_EQ(fwd_scores, 6.0 * sq);  // fp32 write beyond 16 bits, causal fp32 read, bf16 P write
  Strategy plain = s;
  plain.stack = {};
  EXPECT_DOUBLE_EQ(c.forward.flops(), transformer_layer_cost(m, plain).forward.flops());
}

}  // namespace
}  // namespace trainsim::wl
