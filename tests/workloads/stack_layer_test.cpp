// The tensors a PyTorch stack's layer saves for its backward (workloads/training_stacks.md,
// "autocast" and "FSDP2"), counted as the measured GPT allocates them: flash attention writes its
// output as [b, s, heads, head_dim], so the projection reads it through a view, with no copy
// (reports/validation/memory_peak/: one 2Th allocation at the attention line, one at the residual
// add after the projection).
#include <gtest/gtest.h>

#include "model_loader.hpp"
#include "stack_layer.hpp"
#include "strategy_input.hpp"

namespace trainsim::wl {
namespace {

Strategy torch_strategy(StackKind kind, const ModelSpec& m, ModelSpec& resolved) {
  StrategyInput in;
  in.gpus.set(2, "t");
  in.dp.set(2, "t");
  in.zero.set(kind == StackKind::PYTORCH_FSDP ? 3 : 0, "t");
  in.micro_batch.set(2, "t");
  in.precision.set(Numerics::BF16_MIXED, "t");
  TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  const ResolvedInputs r = resolve_inputs(in, m, {8, 1, "t"});
  resolved = r.model;
  resolved.attention = AttentionImpl::FLASH;  // as the measured GPT (no softmax output saved)
  return r.strategy;
}

TEST(TorchLayerSaved, Fsdp2LayerKeeps32ThAndTheLogSumExp) {
  ModelSpec m;
  const Strategy s = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), m);
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden);
  ASSERT_EQ(m.ffn_hidden, 4 * m.hidden);
  // bf16: x, LN1 out, QKV (3h), attention output, x + attn, LN2 out (8h in all), FC1 out and GELU
  // out (4h each): 16h elements of 2 bytes; fp32 log-sum-exp per head and token.
  EXPECT_DOUBLE_EQ(torch_layer_saved_bytes(m, s), 32 * T * h + 4 * static_cast<double>(m.heads) * T);
}

TEST(TorchLayerSaved, AutocastLayerKeeps36ThTheWeightCopiesAndTheLogSumExp) {
  ModelSpec m;
  const Strategy s = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), m);
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden);
  // fp32 x and x + attn (8Th), bf16 casts of the norm outputs, QKV, attention output (12Th), FC1
  // and GELU outputs (16Th); the bf16 copies of the Linear weights and biases.
  EXPECT_DOUBLE_EQ(torch_layer_saved_bytes(m, s),
                   36 * T * h + 2 * linear_params_per_layer(m) + 4 * static_cast<double>(m.heads) * T);
}

}  // namespace
}  // namespace trainsim::wl
