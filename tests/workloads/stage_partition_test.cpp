// Stage partitions: balanced by cost by default, or Megatron-LM's fixed first and last stages.
#include "stage_partition.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "config_error.hpp"
#include "model_loader.hpp"

namespace trainsim::wl {
namespace {

ModelSpec llama_405b_shape() {
  ModelSpec m = builtin_model("gpt3-175b");
  m.layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.kv_heads = 8;
  m.ffn_hidden = 53248;
  m.vocab = 128256;
  m.mlp = MlpKind::SWIGLU;
  m.norm = NormKind::RMSNORM;
  m.position = PositionKind::ROTARY;
  m.tied_embeddings = false;
  return m;
}

Strategy pipeline(int pp, int vpp) {
  Strategy s;
  s.pp = pp;
  s.vpp = vpp;
  s.schedule = vpp > 1 ? Schedule::INTERLEAVED : Schedule::ONE_F_ONE_B;
  s.seq = 8192;
  s.micro_batch = 1;
  return s;
}

TEST(StagePartition, UnevenLayersAreBalancedByCostWithTheHeadOnTheLastStage) {
  // 126 layers on 16 stages x 2 chunks: 32 virtual stages of 3 or 4 layers; the first and last
  // virtual stages (embedding; head and loss) take the fewer.
  const StagePartition p = partition_stages(llama_405b_shape(), pipeline(16, 2));
  ASSERT_EQ(p.layers.size(), 32u);
  EXPECT_EQ(std::accumulate(p.layers.begin(), p.layers.end(), 0), 126);
  for (int n : p.layers) EXPECT_TRUE(n == 3 || n == 4) << n;
  EXPECT_EQ(p.layers.back(), 3) << "the head's work counts on the last virtual stage";
  EXPECT_TRUE(p.balanced_by_cost);
  EXPECT_EQ(p.describe(), "16 stages x 2 chunks: 3, 4 x 30, 3 layers per virtual stage (balanced by cost)");
}

TEST(StagePartition, EvenSplitsStayEvenWhenThatIsBalanced) {
  // Megatron-LM's 1T model: 128 layers on 64 stages, 2 each (Narayanan et al. SC'21, Table 1).
  const StagePartition p = partition_stages(builtin_model("megatron-1t"), pipeline(64, 1));
  for (int n : p.layers) EXPECT_EQ(n, 2);
  EXPECT_FALSE(p.balanced_by_cost);
}

TEST(StagePartition, FixedFirstAndLastStagesAsMegatronLm) {
  Strategy s = pipeline(16, 2);
  s.first_stage_layers = 6;
  s.last_stage_layers = 8;
  const StagePartition p = partition_stages(llama_405b_shape(), s);
  EXPECT_EQ(p.stage_layers(0), 6);
  EXPECT_EQ(p.stage_layers(15), 8);
  for (int st = 1; st < 15; ++st) EXPECT_EQ(p.stage_layers(st), 8);  // (126 - 14) / 14
  EXPECT_EQ(p.layer_count(0), 3);   // stage 0, chunk 0
  EXPECT_EQ(p.layer_count(16), 3);  // stage 0, chunk 1
  s.first_stage_layers = 7;  // 7 layers do not split over 2 chunks
  EXPECT_THROW(partition_stages(llama_405b_shape(), s), ConfigError);
}

}  // namespace
}  // namespace trainsim::wl
