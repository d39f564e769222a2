// The ds_config keys of DeepSpeed's ZeRO-3 coordinator and of its partitioned activation
// checkpoints change the replayed step as DeepSpeed's code says they change its run
// (workloads/stacks/training_stacks.md, "DeepSpeed"), and Megatron-LM's
// tensor slicing runs under --stack deepspeed only with Megatron-LM's model (Megatron-DeepSpeed).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
  // A window wider than the model (1.5 B) keeps every layer's forward gather for its recompute,
  // where the default's 1e9 keeps only the later layers' (the trace between a layer's forward and
  // its recompute passes the rest of the forward and the later layers' recompute and backward):
  // fewer all-gathers, each of which a hook waits for.
  EXPECT_LT(step_s(R"(, "stage3_max_reuse_distance": 1e12)"), defaults);
}

// overlap_comm (DeepSpeed v0.16.5: zero/stage_1_and_2.py:1061-1067 and zero/stage3.py:268-269
// take the compute stream for the gradient reduction when it is off): each bucket's reduction then
// runs in order with the backward instead of beside it. On, DeepSpeed's default for stage 3
// (zero/config.py:351), is what the replay always did, and stays its default.
struct Reductions {
  double step_s = 0;
  std::vector<double> seconds;  // GPU 0's gradient reductions, in order
};
Reductions reductions(int stage, const std::string& overlap) {
  test::ScratchDir dir;
  const std::string ds = dir.write("ds.json", R"({"fp16": {"enabled": true}, "activation_checkpointing": {},
      "zero_optimization": {"stage": )" + std::to_string(stage) + overlap + "}}");
  const std::string trace = (dir.path() / "trace.json").string();
  const auto out = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --gpus 64 --micro-batch 2 --stack deepspeed "
                                      "--deepspeed " + ds + " --format json --trace " + trace);
  Reductions r;
  EXPECT_EQ(out.exit_code, 0) << out.err;
  if (out.exit_code != 0) return r;
  r.step_s = nlohmann::json::parse(out.out)["step_time_s"].get<double>();
  const auto events = nlohmann::json::parse(test::read_file(trace));
  for (const auto& e : events["traceEvents"]) {
    // GPU 0's own rows (process 0).
    if (e.value("ph", "") != "X" || e.value("pid", -1) != 0) continue;
    if (std::string(e["name"]).rfind("reduce_grads", 0) == 0) r.seconds.push_back(e["dur"].get<double>() / 1e6);
  }
  return r;
}

TEST(DeepSpeedKeys, OverlapCommOffReducesInOrderWithTheBackward) {
  // ZeRO-2: 1.5 B parameters in buckets of 5e8 (reduce_bucket_size): three reductions. On, the
  // first two run beside the rest of the backward and only the last, after it, is exposed; off,
  // each also holds the backward up, so the step grows by exactly the first two's time.
  const Reductions on = reductions(2, "");
  const Reductions off = reductions(2, R"(, "overlap_comm": false)");
  ASSERT_EQ(on.seconds.size(), 3u);
  ASSERT_EQ(off.seconds, on.seconds);
  EXPECT_DOUBLE_EQ(reductions(2, R"(, "overlap_comm": true)").step_s, on.step_s);
  EXPECT_NEAR(off.step_s - on.step_s, on.seconds[0] + on.seconds[1], 1e-5);
  EXPECT_GT(on.seconds[0] + on.seconds[1], 0.01);
  // ZeRO-3: the step grows too, by less: the reductions no longer share the fabric with the
  // all-gathers the backward's prefetch runs beside them.
  EXPECT_GT(reductions(3, R"(, "overlap_comm": false)").step_s, reductions(3, "").step_s);
}

// reduce_scatter (DeepSpeed v0.16.5: off, zero/stage_1_and_2.py:1070-1072 all-reduces each bucket
// through gradient_reduction_w_predivide). ZeRO-2, 64 ranks, three buckets of 5e8 fp16 gradients
// (about 1 GB each, the last one smaller): a ring all-reduce sends 2 (n - 1) / n of a bucket, a
// reduce-scatter (n - 1) / n, so each bucket's reduction carries twice the bytes.
TEST(DeepSpeedKeys, ReduceScatterOffAllReducesStageTwosBuckets) {
  const Reductions on = reductions(2, "");
  const Reductions off = reductions(2, R"(, "reduce_scatter": false)");
  ASSERT_EQ(on.seconds.size(), 3u);
  ASSERT_EQ(off.seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(reductions(2, R"(, "reduce_scatter": true)").step_s, on.step_s);
  for (std::size_t b = 0; b < 3; ++b) EXPECT_GT(off.seconds[b], 1.5 * on.seconds[b]) << "bucket " << b;
  EXPECT_GT(off.step_s, on.step_s);
  // ZeRO-3's replay reduce-scatters either way.
  EXPECT_DOUBLE_EQ(reductions(3, R"(, "reduce_scatter": false)").step_s, reductions(3, "").step_s);
}

// activation_checkpointing.partition_activations (deepspeed/runtime/activation_checkpointing/
// checkpointing.py, v0.16.5): each rank keeps 1/tp of a layer's checkpoint and all-gathers it over
// the tensor-parallel group before the layer's recompute. Megatron-LM's layer input is
// seq x micro-batch x hidden fp16: 512 x 2 x 1024 x 2 B = 2 MiB a layer, 4 layers.
struct Checkpoints {
  double host_peak = 0, step_s = 0;
  int gathers = 0;
  double gather_bytes = 0, copy_in_bytes = 0;
};
Checkpoints checkpoints(int tp, bool partition) {
  test::ScratchDir dir;
  const std::string ds = dir.write("ds.json", std::string(R"({"fp16": {"enabled": true}, "activation_checkpointing": {)") +
                                                  R"("cpu_checkpointing": true, "partition_activations": )" +
                                                  (partition ? "true" : "false") + "}}");
  const std::string trace = (dir.path() / "trace.json").string();
  const auto out = test::run_trainsim(
      "simulate --hw dgx2 --gpus 2 --stack deepspeed --deepspeed " + ds + " --megatron-args \"--tensor-model-parallel-size " +
      std::to_string(tp) +
      " --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --max-position-embeddings 512 "
      "--micro-batch-size 2 --fp16\" --format json --trace " + trace);
  Checkpoints c;
  EXPECT_EQ(out.exit_code, 0) << out.err;
  if (out.exit_code != 0) return c;
  const auto j = nlohmann::json::parse(out.out);
  c.host_peak = j["host_peak_bytes"].get<double>();
  c.step_s = j["step_time_s"].get<double>();
  const auto events = nlohmann::json::parse(test::read_file(trace));
  for (const auto& e : events["traceEvents"]) {
    // GPU 0's own rows (process 0); the fabric's rows repeat each collective.
    if (e.value("ph", "") != "X" || !e.contains("args") || e.value("pid", -1) != 0) continue;
    const std::string name = e["name"];
    if (name.rfind("checkpoint_gather", 0) == 0) {
      ++c.gathers;
      c.gather_bytes = e["args"]["bytes"].get<double>();
    }
    if (name.rfind("checkpoint_in", 0) == 0) c.copy_in_bytes = e["args"]["bytes"].get<double>();
  }
  return c;
}

TEST(DeepSpeedKeys, PartitionActivationsSplitsCheckpointsOverTensorParallelRanks) {
  constexpr double LAYER = 512.0 * 2 * 1024 * 2;  // one layer's checkpoint, whole
  const Checkpoints whole = checkpoints(2, false), split = checkpoints(2, true);
  // Whole: each of the node's 2 ranks keeps 4 whole checkpoints in host memory; split: half each.
  EXPECT_DOUBLE_EQ(whole.host_peak, 2 * 4 * LAYER);
  EXPECT_DOUBLE_EQ(split.host_peak, 2 * 4 * LAYER / 2);
  EXPECT_DOUBLE_EQ(whole.copy_in_bytes, LAYER);
  EXPECT_DOUBLE_EQ(split.copy_in_bytes, LAYER / 2);
  // One gather of the whole checkpoint before each layer's recompute, only when partitioned.
  EXPECT_EQ(whole.gathers, 0);
  EXPECT_EQ(split.gathers, 4);
  EXPECT_DOUBLE_EQ(split.gather_bytes, LAYER);
  // Without model parallelism DeepSpeed keeps and loads the checkpoint whole (no gather): the same step.
  const Checkpoints one = checkpoints(1, false), one_split = checkpoints(1, true);
  EXPECT_EQ(one_split.gathers, 0);
  EXPECT_DOUBLE_EQ(one_split.step_s, one.step_s);
  EXPECT_DOUBLE_EQ(one_split.host_peak, one.host_peak);
}

TEST(DeepSpeedKeys, PartitionActivationsNotUnderPipelineParallelism) {
  test::ScratchDir dir;
  const std::string ds = dir.write("ds.json", R"({"fp16": {"enabled": true},
      "activation_checkpointing": {"partition_activations": true}})");
  const auto out = test::run_trainsim(
      "simulate --hw dgx2 --gpus 4 --stack deepspeed --deepspeed " + ds +
      " --megatron-args \"--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 512 --max-position-embeddings 512 --micro-batch-size 2 --global-batch-size 8 "
      "--fp16\"");
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("partition_activations"), std::string::npos) << out.err;
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
