// Hardened model and strategy inputs: every accepted key changes the answer or is refused with a
// reason, sizes are bounded before anything is computed, Megatron-LM arguments are split as a
// shell splits them, and a model argument never silently relabels another model.
#include <gtest/gtest.h>

#include "config_error.hpp"
#include "limits.hpp"
#include "model_loader.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

ModelSpec load_text(const std::string& text) { return load_model(parse_json_text(text, "config.json")); }

nlohmann::json llama() { return test::read_source_json("tests/data/llama2-7b-config.json"); }

TEST(HuggingFaceKeys, HeadDimEqualToHiddenOverHeadsIsHonouredAnotherIsRefused) {
  nlohmann::json j = llama();
  j["head_dim"] = 128;  // 4096 / 32
  const ModelSpec m = load_text(j.dump());
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_EQ(std::count(m.ignored_keys.begin(), m.ignored_keys.end(), "head_dim"), 0) << "head_dim is read, not ignored";
  j["head_dim"] = 256;
  EXPECT_EQ(error_of([&] { load_text(j.dump()); }),
            "config.json: head_dim: expected hidden_size / num_attention_heads = 128 (attention heads of another width "
            "than hidden / heads are not modeled), got 256");
}

TEST(HuggingFaceKeys, TorchDtypeSetsHalfPrecisionNotesFloat32AndRefusesQuantized) {
  nlohmann::json j = llama();
  j["torch_dtype"] = "bfloat16";
  EXPECT_EQ(load_text(j.dump()).numerics, Numerics::BF16_MIXED);
  j["torch_dtype"] = "float16";
  EXPECT_EQ(load_text(j.dump()).numerics, Numerics::FP16_MIXED);
  j["torch_dtype"] = "float32";
  const ModelSpec f32 = load_text(j.dump());
  EXPECT_EQ(f32.numerics, Numerics::FP16_MIXED);
  ASSERT_EQ(f32.notes.size(), 1u);
  EXPECT_NE(f32.notes[0].find("torch_dtype float32 is the checkpoint's storage type"), std::string::npos);
  j["torch_dtype"] = "int8";
  EXPECT_NE(error_of([&] { load_text(j.dump()); }).find("config.json: torch_dtype: expected \"bfloat16\", \"float16\" or "
                                                         "\"float32\" (a quantized checkpoint is not trained as such"),
            std::string::npos);
}

TEST(HuggingFaceKeys, DropoutProbabilitiesDecideWhetherMasksAreStored) {
  nlohmann::json g = test::read_source_json("tests/data/gpt2-xl-config.json");
  EXPECT_TRUE(load_text(g.dump()).dropout);  // 0.1 everywhere
  for (const char* key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) g[key] = 0.0;
  EXPECT_FALSE(load_text(g.dump()).dropout);
  g["attn_pdrop"] = 0.1;
  const ModelSpec mixed = load_text(g.dump());
  EXPECT_TRUE(mixed.dropout);
  EXPECT_EQ(mixed.notes.size(), 1u);
  // GPT-NeoX's transformers defaults are 0: GPT-NeoX-20B stores no dropout masks.
  EXPECT_FALSE(load_text(test::read_source_json("tests/data/gpt-neox-20b-config.json").dump()).dropout);
  g["attn_pdrop"] = 1.5;
  EXPECT_NE(error_of([&] { load_text(g.dump()); }).find("attn_pdrop: expected a probability in [0, 1]"),
            std::string::npos);
}

TEST(HuggingFaceKeys, ArchitecturesTrainsimDoesNotModelAreRefusedNotIgnored) {
  nlohmann::json j = llama();
  j["num_local_experts"] = 8;
  EXPECT_EQ(error_of([&] { load_text(j.dump()); }),
            "config.json: num_local_experts: expected no mixture-of-experts layers (not modeled by trainsim: the answer "
            "would be wrong), got 8");
  j = llama();
  j["sliding_window"] = nullptr;  // off: accepted
  EXPECT_NO_THROW(load_text(j.dump()));
  j["sliding_window"] = 4096;
  EXPECT_NE(error_of([&] { load_text(j.dump()); }).find("sliding_window: expected no sliding-window attention"),
            std::string::npos);
  j = llama();
  j["mlp_bias"] = true;
  EXPECT_NE(error_of([&] { load_text(j.dump()); })
                .find("mlp_bias: expected the same as attention_bias (false): biases on some linear layers only"),
            std::string::npos);
  j["attention_bias"] = true;
  EXPECT_TRUE(load_text(j.dump()).biases);
}

TEST(ModelLimits, SizesBeyondTheLimitsAreRefusedBeforeAnythingIsComputed) {
  nlohmann::json j = test::read_source_json("workloads/models/gpt3-175b.json");
  j["architecture"]["layers"] = 1000000000;
  EXPECT_EQ(error_of([&] { load_text(j.dump()); }),
            "config.json: architecture.layers: expected an integer in [1, 10000], got 1000000000");
  nlohmann::json h = llama();
  h["num_hidden_layers"] = 1000000000;
  EXPECT_NE(error_of([&] { load_text(h.dump()); }).find("num_hidden_layers: expected an integer in [1, 10000]"),
            std::string::npos);
  EXPECT_NE(error_of([] { strategy_from_megatron_args("--num-layers 1000000000"); })
                .find("--megatron-args: --num-layers: expected an integer in [1, 10000], got \"1000000000\""),
            std::string::npos);
  EXPECT_NE(error_of([] { model_from_param_count(1e22); }).find("--params: expected a parameter count in [1, 1e+21]"),
            std::string::npos);
  // At the limit it loads, and its parameter count is a finite positive number.
  j["architecture"]["layers"] = limits::LAYERS.max;
  EXPECT_NO_THROW(load_text(j.dump()));
}

TEST(MegatronArgs, SplitAsAShellWould) {
  const StrategyInput in = strategy_from_megatron_args(
      "--data-path 'my data/a b' --save \"ckpt dir\" --load with\\ space --tensor-model-parallel-size=2");
  EXPECT_EQ(*in.tp, 2);
  EXPECT_EQ(in.no_effect.size(), 3u);
  EXPECT_EQ(error_of([] { strategy_from_megatron_args("--data-path 'a b"); }),
            "--megatron-args: expected a closing single quote, got the end of the text");
  EXPECT_EQ(error_of([] { strategy_from_megatron_args("--data-path \"a b"); }),
            "--megatron-args: expected a closing double quote, got the end of the text");
}

TEST(MegatronArgs, ARepeatedOrContradictoryArgumentIsAnError) {
  EXPECT_EQ(error_of([] { strategy_from_megatron_args("--tensor-model-parallel-size 8 --tensor-model-parallel-size 4"); }),
            "--megatron-args: --tensor-model-parallel-size: expected each argument once, got "
            "--tensor-model-parallel-size twice");
  EXPECT_EQ(error_of([] {
              strategy_from_megatron_args("--num-layers 96 --pipeline-model-parallel-size 8 "
                                          "--virtual-pipeline-model-parallel-size 2 "
                                          "--num-layers-per-virtual-pipeline-stage 3");
            }),
            "--megatron-args: --num-layers-per-virtual-pipeline-stage: expected either it or "
            "--virtual-pipeline-model-parallel-size, not both, got both");
}

TEST(MegatronArgs, ArchitectureArgumentsMustAgreeWithAGivenModel) {
  const StrategyInput big =
      strategy_from_megatron_args("--num-layers 96 --hidden-size 12288 --num-attention-heads 96");
  EXPECT_EQ(error_of([&] { apply_model_overrides(big.model, builtin_model("gpt2-1.5b"), 1); }),
            "--megatron-args: --num-layers: expected the layer count as gpt2-1.5b has it (48), or no --model to take "
            "the architecture from the arguments alone, got 96");
  // Arguments that say what the model already is are fine, and change nothing.
  const StrategyInput same = strategy_from_megatron_args("--num-layers 48 --hidden-size 1600 --num-attention-heads 25");
  const ModelSpec m = apply_model_overrides(same.model, builtin_model("gpt2-1.5b"), 1);
  EXPECT_EQ(m.name, "gpt2-1.5b");
  EXPECT_EQ(m.layers, 48);
}

TEST(StrategyLimits, FileValuesAreBoundedToo) {
  test::ScratchDir dir;
  const std::string s = dir.write("s.json", R"({"schema_version": 1, "global_batch": 1e15})");
  EXPECT_NE(error_of([&] { strategy_from_json(s); }).find("global_batch: expected an integer in [1, 2147483647]"),
            std::string::npos);
  const std::string ds = dir.write("ds.json", R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": 1e300}})");
  EXPECT_NE(error_of([&] { strategy_from_deepspeed(ds); })
                .find("zero_optimization.reduce_bucket_size: expected a number of elements in [1, 1e12]"),
            std::string::npos);
}

}  // namespace
}  // namespace trainsim::wl
