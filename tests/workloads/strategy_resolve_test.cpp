#include <gtest/gtest.h>

#include "config_error.hpp"
#include "model_loader.hpp"
#include "strategy_input.hpp"

namespace trainsim::wl {
namespace {

const ClusterShape DGX_A100{8, 560, "dgx-a100"};

ResolvedInputs resolve(StrategyInput in, const std::string& model = "gpt3-175b", ClusterShape c = DGX_A100) {
  return resolve_inputs(in, builtin_model(model), c);
}

std::string error_of(StrategyInput in, const std::string& model = "gpt3-175b") {
  try {
    resolve(std::move(in), model);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Resolve, DerivesDpNodesAndDefaultBatch) {
  StrategyInput in;
  in.gpus.set(64, "--gpus");
  in.tp.set(8, "--tp");
  in.pp.set(4, "--pp");
  const ResolvedInputs r = resolve(in);
  EXPECT_EQ(r.strategy.dp, 2);
  EXPECT_EQ(r.strategy.nodes, 8);
  EXPECT_EQ(r.strategy.micro_batches(), 4);
  EXPECT_EQ(r.strategy.seq, 2048);
  EXPECT_FALSE(r.infeasible_reason);
}

TEST(Resolve, EachCrossFieldRuleHasItsOwnMessage) {
  StrategyInput product;
  product.gpus.set(64, "--gpus");
  product.dp.set(4, "--dp");
  product.tp.set(8, "--tp");
  EXPECT_NE(error_of(product).find("--dp: expected dp x tp x pp = GPUs: 4 x 8 x 1 = 32 but the GPU count is 64"),
            std::string::npos)
      << error_of(product);

  StrategyInput heads;
  heads.tp.set(5, "--tp");
  heads.gpus.set(5, "--gpus");
  EXPECT_NE(error_of(heads).find("--tp: expected a divisor of the attention heads (96) of gpt3-175b, got 5"),
            std::string::npos)
      << error_of(heads);

  StrategyInput layers;
  layers.pp.set(97, "--pp");
  layers.gpus.set(97, "--gpus");
  EXPECT_NE(error_of(layers).find("--pp: expected pp x vpp (97 x 1) at most the 96 layers of gpt3-175b, got 97"),
            std::string::npos)
      << error_of(layers);
  // Layers need not divide evenly (7 stages of 96 layers are balanced by cost), but a fixed first
  // and last stage must leave the middle an equal share.
  StrategyInput uneven;
  uneven.pp.set(7, "--pp");
  uneven.gpus.set(7, "--gpus");
  EXPECT_EQ(error_of(uneven), "no error");
  uneven.first_stage_layers.set(10, "--first-stage-layers");
  EXPECT_NE(error_of(uneven).find("--first-stage-layers: expected first and last stage layers that leave the other 6 "
                                  "stages an equal share"),
            std::string::npos)
      << error_of(uneven);

  StrategyInput zero_pp;
  zero_pp.pp.set(2, "--pp");
  zero_pp.gpus.set(2, "--gpus");
  zero_pp.zero.set(3, "--zero");
  EXPECT_NE(error_of(zero_pp).find("--zero: expected ZeRO stage 0 or 1 with pipeline parallelism"), std::string::npos);

  StrategyInput offload;
  offload.offload_params.set(OffloadTarget::CPU, "--offload-params");
  offload.zero.set(2, "--zero");
  EXPECT_NE(error_of(offload).find("--offload-params: expected ZeRO stage 3 for parameter offload"), std::string::npos);

  StrategyInput batch;
  batch.gpus.set(8, "--gpus");
  batch.global_batch.set(12, "--global-batch");
  batch.micro_batch.set(1, "--micro-batch");
  EXPECT_NE(error_of(batch).find("--global-batch: expected a multiple of micro-batch x dp (1 x 8 = 8), got 12"),
            std::string::npos);

  StrategyInput vpp;
  vpp.pp.set(4, "--pp");
  vpp.gpus.set(4, "--gpus");
  vpp.schedule.set(Schedule::INTERLEAVED, "--schedule");
  EXPECT_NE(error_of(vpp).find("vpp >= 2 for the interleaved schedule"), std::string::npos);

  StrategyInput ckpt;
  ckpt.offload_activations.set(ActivationOffload::CPU, "--offload-activations");
  EXPECT_NE(error_of(ckpt).find("--offload-activations: expected --recompute full"), std::string::npos);

  StrategyInput seq;
  seq.seq.set(4096, "--seq");
  EXPECT_NE(error_of(seq).find("--seq: expected at most the 2048 learned positions"), std::string::npos);
}

TEST(Resolve, ErrorsFromFilesNameTheFileAndKey) {
  StrategyInput in = strategy_from_megatron_args("--tensor-model-parallel-size 5");
  in.gpus.set(5, "--gpus");
  EXPECT_NE(error_of(in).find("--megatron-args: --tensor-model-parallel-size: expected a divisor of the attention heads"),
            std::string::npos)
      << error_of(in);
}

TEST(Resolve, TooManyNodesIsInfeasibleNotAnError) {
  StrategyInput in;
  in.nodes.set(600, "--nodes");
  const ResolvedInputs r = resolve(in);
  ASSERT_TRUE(r.infeasible_reason);
  EXPECT_EQ(*r.infeasible_reason, "the cluster dgx-a100 has 560 nodes; this configuration needs 600");
}

TEST(Resolve, RawParameterCountRefusesModelParallelism) {
  StrategyInput in;
  in.tp.set(2, "--tp");
  try {
    resolve_inputs(in, model_from_param_count(7.5e9), DGX_A100);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("use --model"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim::wl
