// The ds_config keys of DeepSpeed's ZeRO-3 coordinator change the replayed step as DeepSpeed's
// code says they change its run (workloads/stacks/training_stacks.md, "DeepSpeed"), and Megatron-LM's
// tensor slicing runs under --stack deepspeed only with Megatron-LM's model (Megatron-DeepSpeed).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace trainsim {
namespace {

// A 1.5 B GPT-2 on 64 V100s (4 DGX-2 nodes), ZeRO-3 with every layer checkpointed.
double step_s(const std::string& zero_keys) {
  test::ScratchDir dir;
  const std::string ds = dir.write("ds.json", R"({"fp16": {"enabled": true}, "activation_checkpointing": {},
      "zero_optimization": {"stage": 3)" + zero_keys + "}}");
  const auto out =
      test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --gpus 64 --micro-batch 2 --stack deepspeed --deepspeed " + ds +
                         " --format json");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  if (out.exit_code != 0) return 0;
  const auto j = nlohmann::json::parse(out.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  return j["step_time_s"].get<double>();
}

TEST(DeepSpeedKeys, TheCoordinatorsKeysChangeTheStep) {
  const double defaults = step_s("");
  // No prefetch budget: each submodule's all-gather waits for the one before it to finish.
  const double no_prefetch = step_s(R"(, "stage3_prefetch_bucket_size": 0)");
  EXPECT_GT(no_prefetch, defaults * 1.05);
  // Fewer live parameters than a submodule holds leave no budget either: the same step.
  EXPECT_DOUBLE_EQ(step_s(R"(, "stage3_max_live_parameters": 1000)"), no_prefetch);
  // No reuse window: every recompute and backward gathers its submodule again.
  EXPECT_GT(step_s(R"(, "stage3_max_reuse_distance": 0)"), defaults);
  // A window wider than a layer (the default's 1e9 already is, for this model) changes nothing more.
  EXPECT_DOUBLE_EQ(step_s(R"(, "stage3_max_reuse_distance": 1e12)"), defaults);
}

TEST(DeepSpeedKeys, TensorSlicingOnlyWithMegatronsModel) {
  const std::string zero3 = "--hw dgx2 --gpus 64 --stack deepspeed --zero 3 --recompute full --format json";
  const auto own = test::run_trainsim("simulate --model gpt2-1.5b --tp 2 " + zero3);
  EXPECT_EQ(own.exit_code, 2);
  EXPECT_NE(own.err.find("add --megatron-args"), std::string::npos) << own.err;
  const auto megatron = test::run_trainsim(
      "simulate --megatron-args \"--tensor-model-parallel-size 2 --num-layers 24 --hidden-size 2048 "
      "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2 --fp16\" " + zero3);
  ASSERT_EQ(megatron.exit_code, 0) << megatron.err;
  EXPECT_TRUE(nlohmann::json::parse(megatron.out)["fits"].get<bool>());
}

}  // namespace
}  // namespace trainsim
