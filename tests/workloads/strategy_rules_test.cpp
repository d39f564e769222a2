// The rule list (workloads/strategy_rules.hpp): validate() reports every broken rule, the CLI's
// resolution throws the first one naming its flag, and a strategy's identity (equality, canonical
// text, stable hash) covers every field.
#include <gtest/gtest.h>

#include <set>

#include "config_error.hpp"
#include "model_loader.hpp"
#include "strategy_identity.hpp"
#include "strategy_input.hpp"
#include "strategy_rules.hpp"

namespace trainsim::wl {
namespace {

std::set<std::string> rules_of(const std::vector<RuleViolation>& v) {
  std::set<std::string> out;
  for (const auto& x : v) out.insert(x.rule);
  return out;
}

Strategy legal() {
  Strategy s;
  s.gpus = 16;
  s.nodes = 2;
  s.tp = 8;
  s.pp = 2;
  s.dp = 1;
  s.global_batch = 16;
  s.seq = 2048;
  return s;
}

TEST(StrategyRules, ALegalStrategyBreaksNothing) {
  const ModelSpec m = builtin_model("gpt3-175b");
  EXPECT_TRUE(validate(m, legal(), RuleScope::REPLAY).empty());
}

TEST(StrategyRules, EveryViolationIsReportedNotOnlyTheFirst) {
  const ModelSpec m = builtin_model("gpt3-175b");
  Strategy s = legal();
  s.tp = 5;                 // 96 heads: not a divisor
  s.dp = 1;                 // 5 x 2 x 1 != 16
  s.zero_stage = 3;         // not with pp > 1
  s.offload_activations = ActivationOffload::CPU;  // needs full recompute
  const auto v = validate(m, s);
  EXPECT_EQ(rules_of(v), (std::set<std::string>{"gpus-product", "tp-divides-heads", "tp-divides-kv-heads", "tp-divides-ffn", "zero-with-pipeline",
                                                 "activation-offload-needs-full-recompute"}));
  // The replay scope adds what the simulator does not replay.
  s.offload_optimizer = OffloadTarget::CPU;
  EXPECT_TRUE(rules_of(validate(m, s, RuleScope::REPLAY)).count("pipeline-no-offload"));
  EXPECT_FALSE(rules_of(validate(m, s, RuleScope::STRATEGY)).count("pipeline-no-offload"));
}

TEST(StrategyRules, ResolutionThrowsTheFirstNamingItsFlag) {
  StrategyInput in;
  in.gpus.set(16, "--gpus");
  in.pp.set(2, "--pp");
  in.zero.set(3, "--zero");
  in.offload_activations.set(ActivationOffload::CPU, "--offload-activations");
  try {
    resolve_inputs(in, builtin_model("gpt3-175b"), ClusterShape{8, 560, "dgx-a100"});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--zero: expected ZeRO stage 0 or 1 with pipeline parallelism"), std::string::npos)
        << e.what();
  }
}

TEST(StrategyRules, L2LIsDataParallelismAlone) {
  Strategy s;
  s.gpus = s.dp = 16;
  s.global_batch = 16;
  s.seq = 1024;
  s.l2l = true;
  const ModelSpec m = builtin_model("gpt2-1.5b");
  EXPECT_TRUE(validate(m, s).empty());
  s.tp = 2;  // gpt2-1.5b has 25 heads: two rules break
  s.dp = 8;
  EXPECT_TRUE(rules_of(validate(m, s)).count("l2l-without-tp"));
}

TEST(StrategyIdentity, EqualityTextAndHashCoverEveryField) {
  const Strategy a = legal();
  Strategy b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(stable_hash(a), stable_hash(b));
  // The canonical text is fixed: a cache written by one build is read by the next.
  EXPECT_EQ(canonical_text(a),
            "gpus=16 nodes=2 dp=1 tp=8 pp=2 vpp=1 first_stage_layers=0 last_stage_layers=0 sp=0 schedule=1f1b zero=0 "
            "offload_params=none offload_optimizer=none offload_activations=none recompute=none l2l=0 delayed_update=0 "
            "shards=0 micro_batch=1 global_batch=16 seq=2048 buffers=500000000,500000000,5,100000000,4,1000000000,26214400,"
            "50000000,1000000000,1000000000 stack=idealized,0,bf16,fp32,0");
  EXPECT_EQ(hex64(stable_hash(a)), hex64(fnv1a64(canonical_text(a))));
  // Any one field changed: not equal, another hash.
  std::vector<Strategy> changed(16, a);
  changed[0].micro_batch = 2;
  changed[1].sp = true;
  changed[2].schedule = Schedule::GPIPE;
  changed[3].recompute = Recompute::FULL;
  changed[4].buffers.sub_group_elems = 5e8;
  changed[5].vpp = 2;
  changed[6].offload_activations = ActivationOffload::CPU;
  changed[7].delayed_update = true;
  changed[8].global_batch = 32;
  changed[9].first_stage_layers = 3;
  changed[10].shards = 4;
  changed[11].stack.kind = StackKind::MEGATRON;
  changed[12].buffers.prefetch_bucket_elems = 0;
  changed[13].buffers.max_live_params = 3e9;
  changed[14].buffers.max_reuse_distance_elems = 3e9;
  changed[15].stack.megatron_mpu = true;
  std::set<std::uint64_t> hashes{stable_hash(a)};
  for (const Strategy& c : changed) {
    EXPECT_NE(c, a);
    hashes.insert(stable_hash(c));
  }
  EXPECT_EQ(hashes.size(), changed.size() + 1);
}

}  // namespace
}  // namespace trainsim::wl
