// The planner's answers can run (issue 38): what ranks first is synchronous unless asked, fits by
// its replay, and matches what `simulate` and `memory` say of it; the ranking does not depend on
// --top; replayed steps are never below their bounds; the framework named bounds the search.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace trainsim {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

nlohmann::json plan_json(const std::string& args) {
  const auto r = test::run_trainsim("plan " + args + " --format json --quiet --no-cache");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

// The flagship question of the issue: GPT-3 175B on 1024 A100s. A delayed update whose gradients
// cannot fit must not rank first: the first is synchronous, and its own replay fits within the
// usable memory less the 5% headroom: (80 - 1.5 reserved) x 0.95 = 74.575 GiB.
TEST(PlanAnswers, Gpt3On1024A100sRanksASynchronousStepThatItsReplayFits) {
  const nlohmann::json j = plan_json("--model gpt3-175b --hw dgx-a100 --gpus 1024 --global-batch 1536 --tokens 300e9 --top 1");
  ASSERT_EQ(j["ranked"].size(), 1u);
  const nlohmann::json& best = j["ranked"][0];
  EXPECT_TRUE(best["changes_optimizer_math"].is_null()) << best["description"];
  EXPECT_FALSE(best["strategy"].value("delayed_update", false));
  test::ScratchDir dir;
  const std::string file = dir.write("best.json", best["strategy"].dump());
  const auto sim = test::run_trainsim("simulate --model gpt3-175b --hw dgx-a100 --strategy " + file + " --format json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const nlohmann::json s = nlohmann::json::parse(sim.out);
  EXPECT_TRUE(s["fits"].get<bool>()) << s["infeasible_reason"];
  EXPECT_NEAR(s["memory_limit_bytes"].get<double>(), 74.575 * GiB, 1e-6 * GiB);
  EXPECT_LE(s["peak_reserved_bytes"].get<double>(), 74.575 * GiB);
  EXPECT_NEAR(s["step_time_s"].get<double>(), best["step_time_s"].get<double>(), 1e-9 * best["step_time_s"].get<double>());
  // Megatron-LM's 34 days were estimated at 140 TFLOP/s with 2021's features; a synchronous answer
  // with 2022's (sequence parallelism, selective recompute) may be faster, not tenfold.
  EXPECT_GT(best["time_to_train_days"].get<double>(), 15.0);
}

// `memory` must not say "gradients on CPU" for the delayed update's configuration where the replay
// keeps them on the GPU: ZeRO-1 with the optimizer on the CPU accumulates gradients on the GPU
// (DeepSpeed 0.16.5 stage_1_and_2.py: a partition is copied to the host after the last
// micro-batch's reduction), so `memory` shows them there and says the step overflows.
TEST(PlanAnswers, ZeroOneWithTheOptimizerOnTheCpuKeepsGradientsOnTheGpu) {
  const auto t = test::run_trainsim(
      "memory --model gpt3-175b --hw dgx-a100 --gpus 1024 --global-batch 1536 --tp 8 --sp --zero 1 --offload-optimizer cpu "
      "--micro-batch 1 --recompute selective");
  // 174.6B / 8 x 2 bytes = 40.71 GiB of fp16 gradients per GPU, on the GPU.
  EXPECT_NE(t.out.find("gradients (2 B each)                           41.02      40.71"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("OVERFLOWS"), std::string::npos) << t.out;
}

// The ranking does not depend on how many entries are asked for: --top 105 is the first 105 of
// --top 1000 (the issue's case: six ZeRO-3 + CPU optimizer + delayed update configurations at
// 0.3427 s left out of the top 105).
TEST(PlanAnswers, TheTopKIsThePrefixOfALongerTop) {
  const std::string q = "--model gpt2-1.5b --hw dgx2 --nodes 1 --allow-async";
  const nlohmann::json all = plan_json(q + " --top 1000"), some = plan_json(q + " --top 105");
  ASSERT_GE(all["ranked"].size(), 105u);
  ASSERT_EQ(some["ranked"].size(), 105u);
  for (std::size_t i = 0; i < 105; ++i) {
    EXPECT_EQ(some["ranked"][i]["description"], all["ranked"][i]["description"]) << "rank " << i + 1;
    EXPECT_EQ(some["ranked"][i]["step_time_s"], all["ranked"][i]["step_time_s"]) << "rank " << i + 1;
  }
}

// With a faster CPU-Adam (a copied profile, 8e9 parameters/s), --top 7 is still the first seven.
TEST(PlanAnswers, TheTopSevenHoldsOnAProfileWithAFasterCpuAdam) {
  test::ScratchDir dir;
  nlohmann::json p = test::read_source_json("hwprofiles/dgx2.json");
  p["calibration"]["cpu_adam_params_per_s"] = 8e9;
  const std::string profile = dir.write("fast_adam.json", p.dump());
  const std::string q = "--model gpt2-1.5b --hw " + profile + " --nodes 1 --allow-async";
  const nlohmann::json all = plan_json(q + " --top 1000"), some = plan_json(q + " --top 7");
  ASSERT_EQ(some["ranked"].size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(some["ranked"][i]["description"], all["ranked"][i]["description"]) << "rank " << i + 1;
}

// No replayed step lies below the bounds the search pruned by (the issue: 106 of 354 Turing-NLG
// configurations up to 16% below theirs), asynchronous schemes included.
TEST(PlanAnswers, NoReplayedStepIsBelowItsBounds) {
  const nlohmann::json j = plan_json("--model turing-nlg-17b --hw dgx2 --nodes 2 --allow-async --top 150");
  ASSERT_EQ(j["ranked"].size(), 150u);
  int asynchronous = 0;
  for (const nlohmann::json& e : j["ranked"]) {
    const double step = e["step_time_s"].get<double>();
    EXPECT_GE(step, e["step_time_lower_bound_s"].get<double>()) << e["description"];
    if (!e["step_time_walk_bound_s"].is_null()) {
      EXPECT_GE(step, e["step_time_walk_bound_s"].get<double>()) << e["description"];
    }
    asynchronous += !e["changes_optimizer_math"].is_null();
  }
  EXPECT_GT(asynchronous, 0) << "the case needs asynchronous schemes among the ranked";
}

// Asynchronous schemes are searched only when asked, and marked wherever they rank.
TEST(PlanAnswers, AsynchronousSchemesOnlyWithAllowAsyncAndMarked) {
  const nlohmann::json sync = plan_json("--model gpt2-1.5b --hw dgx2 --nodes 1 --top 50");
  for (const nlohmann::json& e : sync["ranked"]) {
    EXPECT_TRUE(e["changes_optimizer_math"].is_null()) << e["description"];
    EXPECT_FALSE(e["strategy"].value("delayed_update", false)) << e["description"];
  }
  const auto table = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 --nodes 1..2 --allow-async --quiet --no-cache");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  if (table.out.find("delayed update") != std::string::npos) {
    EXPECT_NE(table.out.find("  * changes the optimizer's math"), std::string::npos) << table.out;
  }
}

// The framework bounds the search: Megatron-LM's flags hold what they set (no sequence
// parallelism, no distributed optimizer unless given), its schedules only; a DeepSpeed file holds
// its ZeRO stage and offload, on DeepSpeed's engine (tp 1, no selective recompute).
TEST(PlanAnswers, TheFrameworkNamedBoundsTheSearch) {
  const nlohmann::json mg = plan_json("--model gpt3-175b --hw dgx-a100 --gpus 1024 --global-batch 1536 --top 5 --megatron-args "
                                      "\"--recompute-granularity full --recompute-method uniform --recompute-num-layers 1\"");
  ASSERT_FALSE(mg["ranked"].empty());
  for (const nlohmann::json& e : mg["ranked"]) {
    const nlohmann::json& s = e["strategy"];
    EXPECT_EQ(s.value("recompute", ""), "full") << e["description"];
    EXPECT_FALSE(s.value("sp", false)) << e["description"];
    EXPECT_EQ(s.value("zero", -1), 0) << e["description"];
    EXPECT_TRUE(s.value("schedule", "1f1b") == "1f1b" || s.value("schedule", "") == "interleaved") << e["description"];
  }
  test::ScratchDir dir;
  const std::string ds = dir.write("ds.json", R"({"train_batch_size": 512, "fp16": {"enabled": true},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})");
  const nlohmann::json d = plan_json("--model gpt-13b --hw dgx2 --nodes 1 --top 5 --deepspeed " + ds);
  ASSERT_FALSE(d["ranked"].empty());
  for (const nlohmann::json& e : d["ranked"]) {
    const nlohmann::json& s = e["strategy"];
    EXPECT_EQ(s.value("zero", -1), 3) << e["description"];
    EXPECT_EQ(s.value("offload_optimizer", ""), "cpu") << e["description"];
    EXPECT_EQ(s.value("tp", 0), 1) << e["description"];
    EXPECT_NE(s.value("recompute", ""), "selective") << e["description"];
  }
  // compare takes the same flags.
  const auto c = test::run_trainsim("compare --model gpt-13b --hw dgx2 --nodes 1 --quiet --no-cache --deepspeed " + ds);
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

// A step too long for one replay is extrapolated and said so, never "does not fit": Megatron-LM's
// 1T on 3072 A100s with two interleaved chunks (512 micro-batches).
TEST(PlanAnswers, AStepPastTheOpLimitIsExtrapolatedNotRefused) {
  const auto r = test::run_trainsim(
      "simulate --model megatron-1t --hw dgx-a100 --gpus 3072 --format json --megatron-args \"--num-layers 128 --hidden-size 25600 "
      "--num-attention-heads 160 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 64 "
      "--num-layers-per-virtual-pipeline-stage 1 --global-batch-size 3072 --micro-batch-size 1 --recompute-granularity full "
      "--recompute-method uniform --recompute-num-layers 1\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["fits"].get<bool>()) << j["infeasible_reason"];
  EXPECT_NE(j["simulation"].dump().find("extrapolated, not replayed whole"), std::string::npos) << j["simulation"];
  // Narayanan et al. (SC'21) Table 1: 163 TFLOP/s per GPU (with recompute) on this layout.
  EXPECT_NEAR(j["hardware_tflops_per_gpu"].get<double>() / 163.0, 1.0, 0.15);
}

// Node counts past the cluster answer at once.
TEST(PlanAnswers, ACountPastTheClusterIsAnErrorAtOnce) {
  const auto r = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 --nodes 200 --quiet --no-cache");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("96 nodes"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// --time-limit ends the search with what it has, each count not searched to the end marked.
TEST(PlanAnswers, ATimeLimitAnswersWithWhatItHasAndSaysSo) {
  const nlohmann::json j = plan_json("--model turing-nlg-17b --hw dgx2 --nodes 1..8 --allow-async --top 50 --time-limit 1");
  ASSERT_TRUE(j.contains("incomplete"));
  EXPECT_FALSE(j["incomplete"].is_null());
  EXPECT_NE(j["incomplete"].dump().find("time limit"), std::string::npos) << j["incomplete"];
}


// The issue's targets: the #1 of each plan, simulated on its own, fits the usable memory less the
// headroom by its replayed reserved peak, and its replayed allocated peak lies within 5% of the
// memory model's bytes (the reserved peak adds the caching allocator's fragmentation, which the
// model does not count: under ZeRO-3 with offload, a third more).
TEST(PlanAnswers, EachTargetPlansFirstFitsByItsReplayAndMatchesTheMemoryModel) {
  struct Case {
    std::string model, hw, args;
  };
  const std::vector<Case> cases = {
      {"gpt3-175b", "dgx-a100", "--nodes 64 --global-batch 1536"},
      {test::source_path("tests/data/llama3-70b-config.json"), "dgx-a100", "--nodes 64 --seq 8192 --global-batch 512"},
      {"megatron-1t", "dgx2", "--nodes 32"},
      {"gpt-13b", "v100-workstation", "--nodes 1"},
  };
  for (const Case& c : cases) {
    const nlohmann::json j = plan_json("--model " + c.model + " --hw " + c.hw + " " + c.args + " --top 1");
    ASSERT_EQ(j["ranked"].size(), 1u) << c.model;
    test::ScratchDir dir;
    const std::string file = dir.write("best.json", j["ranked"][0]["strategy"].dump());
    const std::string seq = c.args.find("--seq 8192") != std::string::npos ? " --seq 8192" : "";
    const auto r = test::run_trainsim("simulate --model " + c.model + " --hw " + c.hw + " --strategy " + file + seq + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json s = nlohmann::json::parse(r.out);
    EXPECT_TRUE(s["fits"].get<bool>()) << c.model << ": " << s["infeasible_reason"];
    EXPECT_LE(s["peak_reserved_bytes"].get<double>(), s["memory_limit_bytes"].get<double>()) << c.model;
    EXPECT_NEAR(s["peak_memory_bytes"].get<double>() / s["memory_model_gpu_bytes"].get<double>(), 1.0, 0.05) << c.model;
  }
}


// Training runs whole steps: 31B tokens with a global batch of 2^30 sequences of 1024 take one
// step (1.1e12 tokens), not the fraction of it that tokens over tokens/s would give.
TEST(PlanAnswers, TimeToTrainIsAtLeastOneStep) {
  const nlohmann::json j = plan_json("--model gpt2-1.5b --hw dgx2 --nodes 1 --global-batch 1073741824 --top 1");
  ASSERT_EQ(j["ranked"].size(), 1u);
  const nlohmann::json& e = j["ranked"][0];
  EXPECT_GE(e["time_to_train_days"].get<double>() * 86400, e["step_time_s"].get<double>() * (1 - 1e-12));
  // 2^31 sequences is past what a step's micro-batch count may hold: refused, naming the flag.
  const auto past = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 --nodes 1 --global-batch 2147483648 --quiet --no-cache");
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_NE(past.err.find("--global-batch"), std::string::npos) << past.err;
}

}  // namespace
}  // namespace trainsim
