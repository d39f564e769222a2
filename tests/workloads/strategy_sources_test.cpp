#include <gtest/gtest.h>

#include <algorithm>

#include "config_error.hpp"
#include "model_loader.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

// Whether the key at `origin` is listed as without effect, with its reason or without.
bool listed_no_effect(const StrategyInput& in, const std::string& origin) {
  return std::any_of(in.no_effect.begin(), in.no_effect.end(),
                     [&](const std::string& e) { return e == origin || e.starts_with(origin + " ("); });
}

TEST(DeepSpeedConfig, ReadsZeroInfinityOffloadAndBatch) {
  test::ScratchDir dir;
  const std::string path = dir.write("ds.json", R"({
    "train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
    "fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16},
    "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 6},
                          "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme"},
                          "overlap_comm": true, "stage3_prefetch_bucket_size": 1e8},
    "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true},
    "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}
  })");
  const StrategyInput in = strategy_from_deepspeed(path);
  EXPECT_EQ(*in.zero, 3);
  EXPECT_EQ(*in.offload_params, OffloadTarget::NVME);
  EXPECT_EQ(*in.offload_optimizer, OffloadTarget::NVME);
  EXPECT_EQ(*in.micro_batch, 4);
  EXPECT_EQ(*in.global_batch, 64);
  EXPECT_EQ(*in.precision, Numerics::FP16_MIXED);
  EXPECT_EQ(*in.recompute, Recompute::FULL);
  EXPECT_EQ(*in.offload_activations, ActivationOffload::CPU);
  // Read as DeepSpeed's partitioned checkpoints (no longer a key without effect).
  EXPECT_TRUE(*in.partition_activations);
  EXPECT_FALSE(listed_no_effect(in, path + ": activation_checkpointing.partition_activations"));
  EXPECT_DOUBLE_EQ(in.buffers.offload_param_buffer_count, 6);
  // Read as the coordinator's prefetch budget (no longer a key without effect).
  EXPECT_DOUBLE_EQ(in.buffers.prefetch_bucket_elems, 1e8);
  EXPECT_FALSE(listed_no_effect(in, path + ": zero_optimization.stage3_prefetch_bucket_size"));
  // Read as where the gradients are reduced (no longer a key without effect).
  EXPECT_TRUE(in.buffers.overlap_comm);
  EXPECT_FALSE(listed_no_effect(in, path + ": zero_optimization.overlap_comm"));
  EXPECT_EQ(in.zero.origin, path + ": zero_optimization.stage");
  // Known keys that change nothing we compute are reported back, each with why.
  EXPECT_NE(std::find(in.no_effect.begin(), in.no_effect.end(),
                      path + ": optimizer (trainsim costs Adam's states and step whatever the type; other optimizers "
                             "are not modeled)"),
            in.no_effect.end());
  for (const std::string& entry : in.no_effect) {
    EXPECT_NE(entry.find(" ("), std::string::npos) << entry;
    EXPECT_EQ(entry.back(), ')') << entry;
  }
}

// fp16 master weights and gradients change the optimizer's memory, which is not modeled: false
// (DeepSpeed's default) is listed, true refused.
TEST(DeepSpeedConfig, Fp16MasterWeightsAreListedOffAndRefusedOn) {
  test::ScratchDir dir;
  const std::string off = dir.write("off.json", R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": false}})");
  const StrategyInput in = strategy_from_deepspeed(off);
  ASSERT_EQ(in.no_effect.size(), 1u);
  EXPECT_EQ(in.no_effect[0], off + ": fp16.fp16_master_weights_and_grads (false, DeepSpeed's default)");
  const std::string on = dir.write("on.json", R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": true}})");
  try {
    strategy_from_deepspeed(on);
    FAIL() << "fp16_master_weights_and_grads true was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fp16.fp16_master_weights_and_grads"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not modeled"), std::string::npos) << e.what();
  }
}

TEST(DeepSpeedConfig, UnknownKeyAndAutoValuesAreErrors) {
  test::ScratchDir dir;
  const std::string unknown = dir.write("a.json", R"({"zero_optimization": {"stage": 2, "overlap_comms": true}})");
  try {
    strategy_from_deepspeed(unknown);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "zero_optimization.overlap_comms");
  }
  const std::string automatic = dir.write("b.json", R"({"train_micro_batch_size_per_gpu": "auto"})");
  try {
    strategy_from_deepspeed(automatic);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "train_micro_batch_size_per_gpu");
    EXPECT_NE(std::string(e.what()).find("Hugging Face Trainer"), std::string::npos);
  }
}

TEST(MegatronArgs, ReadsParallelismModelAndRecompute) {
  const StrategyInput in = strategy_from_megatron_args(
      "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 64 --num-layers 128 --hidden-size 25600 "
      "--num-attention-heads 160 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
      "--global-batch-size 3072 --num-layers-per-virtual-pipeline-stage 1 --sequence-parallel "
      "--recompute-activations --fp16 --lr 1e-4 --use-distributed-optimizer");
  EXPECT_EQ(*in.tp, 8);
  EXPECT_EQ(*in.pp, 64);
  EXPECT_EQ(*in.vpp, 2);  // 128 layers / 64 stages / 1 layer per virtual stage
  EXPECT_EQ(*in.schedule, Schedule::INTERLEAVED);
  EXPECT_TRUE(*in.sp);
  EXPECT_EQ(*in.recompute, Recompute::SELECTIVE);
  EXPECT_EQ(*in.zero, 1);
  EXPECT_EQ(*in.model.layers, 128);
  EXPECT_EQ(in.tp.origin, "--megatron-args: --tensor-model-parallel-size");
  EXPECT_EQ(in.no_effect.size(), 1u);
}

TEST(MegatronArgs, UnknownArgumentAndBadValueAreErrors) {
  EXPECT_THROW(strategy_from_megatron_args("--tensor-model-parallel-size 8 --frobnicate"), ConfigError);
  try {
    strategy_from_megatron_args("--tensor-model-parallel-size eight");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "--tensor-model-parallel-size");
    EXPECT_NE(std::string(e.what()).find("an integer in [1, 16777216], got \"eight\""), std::string::npos) << e.what();
  }
}

TEST(MegatronArgs, BuildAModelWithoutAZooEntry) {
  const StrategyInput in = strategy_from_megatron_args(
      "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048");
  const ModelSpec m = apply_model_overrides(in.model, std::nullopt, 1);
  EXPECT_EQ(m.layers, 24);
  EXPECT_EQ(m.ffn_hidden, 8192);
  EXPECT_EQ(m.vocab, 50304);  // 50257 padded to a multiple of 128
}

TEST(StrategyJson, StrictSchema) {
  test::ScratchDir dir;
  const std::string good = dir.write("s.json", R"({"schema_version": 1, "tp": 2, "pp": 4, "schedule": "gpipe"})");
  const StrategyInput in = strategy_from_json(good);
  EXPECT_EQ(*in.tp, 2);
  EXPECT_EQ(*in.schedule, Schedule::GPIPE);
  const std::string bad = dir.write("b.json", R"({"schema_version": 1, "schedule": "zigzag"})");
  try {
    strategy_from_json(bad);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "schedule");
    EXPECT_NE(std::string(e.what()).find("\"gpipe\", \"1f1b\", \"interleaved\", \"pipedream\", \"2bw\""),
              std::string::npos);
  }
}

TEST(StrategyInput, LaterSourcesOverrideEarlierOnes) {
  StrategyInput file = strategy_from_megatron_args("--tensor-model-parallel-size 8 --micro-batch-size 2");
  StrategyInput flags;
  flags.tp.set(4, "--tp");
  file.merge(flags);
  EXPECT_EQ(*file.tp, 4);
  EXPECT_EQ(file.tp.origin, "--tp");
  EXPECT_EQ(*file.micro_batch, 2);
}

}  // namespace
}  // namespace trainsim::wl
