// What one transformer layer of a PyTorch stack keeps for its backward, against what a real layer
// kept: calibrate/scripts/saved_bytes_probe.py measured torch.cuda.memory_allocated around one
// layer's forward on an H200 (reports/calibration/saved_bytes/), for the measured
// runs' GPT block and the Llama-style block (RMSNorm, grouped-query attention, rotary embeddings,
// SwiGLU), under autocast (fp32 parameters and residual) and in bf16 (FSDP2's param_dtype), two of
// them also under activation checkpointing. The memory model's
// torch_layer_saved_bytes (torch_layer_checkpoint_bytes when checkpointed) must give each within 1%.
#include <gtest/gtest.h>

#include <string>

#include "model_loader.hpp"
#include "stack_layer.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

struct Case {
  ModelSpec model;
  Strategy strategy;
};

Case case_of(const nlohmann::json& row) {
  ModelSpec m = builtin_model("gpt2-1.5b");
  const bool llama = row.at("arch") == "llama";
  m.hidden = row.at("hidden").get<std::int64_t>();
  m.heads = row.at("heads").get<std::int64_t>();
  m.kv_heads = row.at("kv_heads").get<std::int64_t>();
  m.ffn_hidden = row.at("ffn_hidden").get<std::int64_t>();
  m.seq_len = row.at("seq").get<std::int64_t>();
  m.norm = llama ? NormKind::RMSNORM : NormKind::LAYERNORM;
  m.mlp = llama ? MlpKind::SWIGLU : MlpKind::GELU;
  m.position = llama ? PositionKind::ROTARY : PositionKind::LEARNED;
  m.biases = !llama;
  m.tied_embeddings = !llama;
  m.dropout = false;
  m.attention = AttentionImpl::FLASH;
  const bool autocast = row.at("mode") == "autocast";
  StrategyInput in;
  in.recompute.set(row.value("checkpointed", false) ? Recompute::FULL : Recompute::NONE, "t");
  in.gpus.set(1, "t");
  in.dp.set(1, "t");
  in.zero.set(autocast ? 0 : 3, "t");
  in.micro_batch.set(row.at("micro_batch").get<int>(), "t");
  in.seq.set(row.at("seq").get<int>(), "t");
  in.precision.set(Numerics::BF16_MIXED, "t");
  TrainingStack stack;
  stack.kind = autocast ? StackKind::PYTORCH : StackKind::PYTORCH_FSDP;
  in.stack.set(stack, "t");
  const ResolvedInputs r = resolve_inputs(in, m, {8, 1, "t"});
  Case c{r.model, r.strategy};
  c.model.attention = AttentionImpl::FLASH;
  return c;
}

TEST(TorchLayerSaved, EveryMeasuredLayerKeepsWhatTheModelSays) {
  const nlohmann::json doc = test::read_source_json("reports/calibration/saved_bytes/saved_bytes.json");
  const auto& rows = doc.at("layers");
  ASSERT_GE(rows.size(), 10u);
  for (const auto& row : rows) {
    const Case c = case_of(row);
    const double measured = row.at("saved_bytes_per_layer").get<double>();
    // A checkpointed layer keeps its input alone (run_step_stacks.Checkpointed).
    const double modeled = c.strategy.recompute == Recompute::FULL ? torch_layer_checkpoint_bytes(c.model, c.strategy)
                                                                    : torch_layer_saved_bytes(c.model, c.strategy);
    EXPECT_NEAR(modeled / measured, 1.0, 0.01)
        << row.at("name").get<std::string>() << ": modeled " << modeled / (1 << 20) << " MiB, measured "
        << measured / (1 << 20) << " MiB";
  }
}

}  // namespace
}  // namespace trainsim::wl
