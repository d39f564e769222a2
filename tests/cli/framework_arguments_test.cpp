// Framework arguments that change memory or time (issue 43, item 3): every Megatron-LM, DeepSpeed
// and Hugging Face key or combination that would have been answered as if it changed nothing, or
// accepted where the framework itself refuses it, is refused naming the key and the reason; the
// combinations trainsim models are answered.
#include "cli_cases.hpp"

namespace trainsim::test {
namespace {

TEST(FrameworkArguments, UnmodeledOrInvalidCombinationsAreExit2WithTheirMessage) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  const std::string ds_head = R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, )";
  dir.write("mics.json", ds_head + R"("zero_optimization": {"stage": 3, "mics_shard_size": 8}})");
  dir.write("hpz.json", ds_head + R"("zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}})");
  dir.write("qw.json", ds_head + R"("zero_optimization": {"stage": 3, "zero_quantized_weights": true}})");
  dir.write("qg.json", ds_head + R"("zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})");
  dir.write("nvme_param.json", ds_head + R"("zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})");
  dir.write("nvme_opt.json", ds_head + R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": null}}})");
  const nlohmann::json llama = read_source_json("tests/data/llama2-7b-config.json");
  auto hf = [&](const char* file, const char* key, nlohmann::json value) {
    nlohmann::json j = llama;
    j[key] = std::move(value);
    dir.write(file, j.dump());
  };
  hf("xattn.json", "add_cross_attention", true);
  hf("quant.json", "quantization_config", {{"load_in_8bit", true}});
  hf("moe.json", "moe_num_experts", 8);
  hf("shared.json", "n_shared_experts", 2);
  hf("dbrx.json", "ffn_config", {{"moe_num_experts", 16}});
  nlohmann::json ffn = read_source_json("workloads/models/gpt-13b.json");
  ffn["architecture"]["ffn_hidden"] = 6401;
  dir.write("ffn6401.json", ffn.dump());
  const std::string megatron = "memory --model gpt2-1.5b --gpus 4 --pp 4 --megatron-args ";
  const std::vector<Case> cases = {
      {"Megatron block recompute of 4 of 12 layers", megatron + "\"--recompute-granularity full --recompute-method block --recompute-num-layers 4\"",
       "--megatron-args: --recompute-num-layers: expected at least the 13 layers of the largest pipeline chunk"},
      {"Megatron uniform recompute in groups of 8", megatron + "\"--recompute-granularity full --recompute-method uniform --recompute-num-layers 8\"",
       "--megatron-args: --recompute-num-layers: expected 1 with --recompute-method uniform (uniform N checkpoints the input "
       "of each group of N layers"},
      {"Megatron recompute method with selective", megatron + "\"--recompute-activations --recompute-method block\"",
       "--megatron-args: --recompute-method: expected no --recompute-method or --recompute-num-layers with selective"},
      {"Megatron recompute method without its layer count", megatron + "\"--recompute-granularity full --recompute-method block\"",
       "--megatron-args: --recompute-num-layers: expected --recompute-method and --recompute-num-layers together"},
      // Megatron-LM's transformer_config.py refuses full granularity without a method (core_v0.16.1,
      // __post_init__), with or without a layer count; trainsim once answered it as full recompute.
      {"Megatron full granularity without a method", megatron + "\"--recompute-granularity full\"",
       "--megatron-args: --recompute-method: expected --recompute-method \"block\" or \"uniform\" with "
       "--recompute-granularity full (Megatron-LM's transformer_config.py refuses full granularity without one); add "
       "--recompute-method uniform --recompute-num-layers 1 to recompute every layer, the full recompute trainsim models, "
       "got --recompute-granularity full without --recompute-method"},
      {"Megatron full granularity with a layer count but no method",
       megatron + "\"--recompute-granularity full --recompute-num-layers 1\"",
       "--megatron-args: --recompute-method: expected --recompute-method \"block\" or \"uniform\" with "
       "--recompute-granularity full"},
      {"Megatron --fp16 --bf16", "memory --model gpt2-1.5b --megatron-args \"--fp16 --bf16\"",
       "--megatron-args: --bf16: expected either --fp16 or --bf16, not both (Megatron-LM's arguments.py asserts it), got both"},
      {"ffn hidden 6401 over tp 8",
       "memory --gpus 8 --megatron-args \"--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --ffn-hidden-size 6401 "
       "--tensor-model-parallel-size 8\"",
       "--megatron-args: --tensor-model-parallel-size: expected a divisor of the MLP hidden size (6401) of megatron-args"},
      {"a model's ffn_hidden 6401 over --tp 8", "simulate --model {dir}/ffn6401.json --gpus 8 --tp 8",
       "--tp: expected a divisor of the MLP hidden size (6401) of gpt-13b (Megatron-LM asserts ffn_hidden_size % tp == 0 "
       "where it splits the MLP), got 8"},
      {"DeepSpeed MiCS", "memory --model gpt2-1.5b --deepspeed {dir}/mics.json",
       "{dir}/mics.json: zero_optimization.mics_shard_size: expected -1 (DeepSpeed's default, off: MiCS sharding"},
      {"DeepSpeed hpZ", "memory --model gpt2-1.5b --deepspeed {dir}/hpz.json",
       "{dir}/hpz.json: zero_optimization.zero_hpz_partition_size: expected 1 (DeepSpeed's default, off: ZeRO++"},
      {"DeepSpeed qwZ", "memory --model gpt2-1.5b --deepspeed {dir}/qw.json",
       "{dir}/qw.json: zero_optimization.zero_quantized_weights: expected false"},
      {"DeepSpeed qgZ", "memory --model gpt2-1.5b --deepspeed {dir}/qg.json",
       "{dir}/qg.json: zero_optimization.zero_quantized_gradients: expected false"},
      {"DeepSpeed nvme params without a path", "memory --model gpt2-1.5b --deepspeed {dir}/nvme_param.json",
       "{dir}/nvme_param.json: zero_optimization.offload_param.nvme_path: expected the directory DeepSpeed swaps to"},
      {"DeepSpeed nvme optimizer with a null path", "memory --model gpt2-1.5b --deepspeed {dir}/nvme_opt.json",
       "{dir}/nvme_opt.json: zero_optimization.offload_optimizer.nvme_path: expected the directory DeepSpeed swaps to"},
      {"HF add_cross_attention", "memory --model {dir}/xattn.json",
       "{dir}/xattn.json: add_cross_attention: expected no cross-attention layers"},
      {"HF quantization_config", "memory --model {dir}/quant.json",
       "{dir}/quant.json: quantization_config: expected no quantized weights"},
      {"HF moe_num_experts", "memory --model {dir}/moe.json",
       "{dir}/moe.json: moe_num_experts: expected no mixture-of-experts layers"},
      {"HF n_shared_experts", "memory --model {dir}/shared.json",
       "{dir}/shared.json: n_shared_experts: expected no mixture-of-experts layers"},
      {"HF ffn_config.moe_num_experts", "memory --model {dir}/dbrx.json",
       "{dir}/dbrx.json: ffn_config.moe_num_experts: expected no mixture-of-experts layers"},
      // 2^31 sequences once gave a 306-day step and 4.34 days to train 31B tokens; the micro-batch count
      // a step holds is an int (tests/planner/plan_answers_test.cpp: training takes whole steps).
      {"a global batch of 2^31", "simulate --model gpt2-1.5b --gpus 16 --global-batch 2147483648",
       "--global-batch: expected a whole number <= 2147483647, got 2147483648"},
  };
  expect_refused(cases, d);
}

// Megatron's block N with N covering every layer of each chunk, and uniform 1, are the full
// recompute trainsim models: answered, with a note that says so, and the same activations as
// --recompute full. With no granularity, Megatron reads neither flag: no effect.
TEST(FrameworkArguments, MegatronRecomputeMethodsThatRecomputeEveryLayerAreAnswered) {
  auto activations = [](const std::string& args) {
    const auto r = run_trainsim("memory --model gpt2-1.5b --gpus 4 --pp 4 --format json " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  const auto full = activations("--recompute full");
  const auto block = activations("--megatron-args \"--recompute-granularity full --recompute-method block --recompute-num-layers 13\"");
  const auto uniform = activations("--megatron-args \"--recompute-granularity full --recompute-method uniform --recompute-num-layers 1\"");
  ASSERT_FALSE(full.is_null());
  EXPECT_EQ(block["per_gpu"]["activations_bytes"], full["per_gpu"]["activations_bytes"]);
  EXPECT_EQ(uniform["per_gpu"]["activations_bytes"], full["per_gpu"]["activations_bytes"]);
  EXPECT_NE(block.dump().find("--recompute-method block 13 covers every layer of each chunk (13)"), std::string::npos);
  EXPECT_NE(uniform.dump().find("--recompute-method uniform --recompute-num-layers 1: every layer checkpointed"),
            std::string::npos);
  // --recompute-activations makes the granularity selective whatever --recompute-granularity says
  // (Megatron-LM's arguments.py), in either order: no method is asked for then.
  const auto selective = activations("--megatron-args \"--recompute-activations\"");
  for (const char* both : {"--recompute-granularity full --recompute-activations", "--recompute-activations --recompute-granularity full"}) {
    EXPECT_EQ(activations(std::string("--megatron-args \"") + both + "\"")["per_gpu"]["activations_bytes"],
              selective["per_gpu"]["activations_bytes"])
        << both;
  }
  EXPECT_NE(selective["per_gpu"]["activations_bytes"], full["per_gpu"]["activations_bytes"]);
  const auto none = activations("--megatron-args \"--recompute-method block --recompute-num-layers 4\"");
  EXPECT_NE(none["inputs"]["no_effect"].dump().find("--recompute-method (no --recompute-granularity)"), std::string::npos)
      << none["inputs"].dump();
}

}  // namespace
}  // namespace trainsim::test
