// Which committed capture stands in for a user's config.json: the one of the same model_type whose
// completed config differs only in sizes and step-neutral keys, in the run's numerics and recompute.
// The directory is written here (TRAINSIM_CAPTURES), with Falcon's two attention forms and a Gemma 2
// with its alternating layer types, so each rule of committed_captures.hpp has a case that fails.
#include "committed_captures.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config_error.hpp"

namespace trainsim::wl {
namespace {

namespace fs = std::filesystem;

class CommittedCaptures : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trainsim_committed_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write("falcon.effective_config.json",
          R"({"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 8, "num_kv_heads": 2,
              "new_decoder_architecture": true, "multi_query": true, "parallel_attn": true, "bias": false,
              "tie_word_embeddings": true, "rope_theta": 10000.0, "bos_token_id": 11, "use_cache": true})");
    write("falcon_mqa.effective_config.json",
          R"({"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 8, "num_kv_heads": 8,
              "new_decoder_architecture": false, "multi_query": true, "parallel_attn": true, "bias": false,
              "tie_word_embeddings": true, "rope_theta": 10000.0, "bos_token_id": 11, "use_cache": true})");
    write("gemma2.effective_config.json",
          R"({"model_type": "gemma2", "hidden_size": 256, "num_hidden_layers": 4, "tie_word_embeddings": true,
              "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
              "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}})");
    for (const char* name : {"falcon", "falcon_mqa", "gemma2"}) {
      for (const char* variant : {"autocast-bf16", "autocast-bf16.recompute", "bf16"}) {
        write(std::string(name) + "." + variant + ".json.gz", "");
      }
    }
    ::setenv("TRAINSIM_CAPTURES", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("TRAINSIM_CAPTURES");
    fs::remove_all(dir_);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string config(const std::string& text) {
    write("user.config.json", text);
    return (dir_ / "user.config.json").string();
  }
  std::string capture(const std::string& name) { return (dir_ / name).string(); }

  fs::path dir_;
};

// Falcon 7B's own config (multi-query, the old decoder) at its sizes, with other token ids and
// epsilons: the multi-query capture, not the first one of the family.
TEST_F(CommittedCaptures, TheSameStructureAtOtherSizesTakesItsCapture) {
  const std::string falcon7b = config(R"({"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
      "num_kv_heads": 71, "new_decoder_architecture": false, "multi_query": true, "parallel_attn": true, "bias": false,
      "tie_word_embeddings": true, "rope_theta": 500000.0, "bos_token_id": 1, "layer_norm_epsilon": 1e-6,
      "use_cache": false, "vocab_size": 65024})");
  EXPECT_EQ(committed_capture_for(falcon7b, Numerics::BF16_MIXED, false), capture("falcon_mqa.autocast-bf16.json.gz"));
  EXPECT_EQ(committed_capture_for(falcon7b, Numerics::BF16_MIXED, true), capture("falcon_mqa.autocast-bf16.recompute.json.gz"));
  EXPECT_EQ(committed_capture_for(falcon7b, Numerics::BF16, false), capture("falcon_mqa.bf16.json.gz"));
}

TEST_F(CommittedCaptures, AStructuralKeyThatDiffersIsRefusedByName) {
  const std::string untied = config(R"({"model_type": "falcon", "hidden_size": 4544, "new_decoder_architecture": false,
      "multi_query": true, "parallel_attn": true, "bias": false, "tie_word_embeddings": false})");
  try {
    committed_capture_for(untied, Numerics::BF16_MIXED, false);
    FAIL() << "an untied Falcon took a tied capture";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "tie_word_embeddings");
    EXPECT_EQ(e.got(), "false");
    EXPECT_NE(e.expected().find("falcon_mqa"), std::string::npos) << e.expected();
    EXPECT_NE(e.expected().find("trainsim capture --hf-config"), std::string::npos) << e.expected();
  }
}

TEST_F(CommittedCaptures, NumericsWithoutACaptureAreRefused) {
  const std::string falcon = config(R"({"model_type": "falcon", "new_decoder_architecture": true, "multi_query": true,
      "parallel_attn": true, "bias": false, "tie_word_embeddings": true})");
  EXPECT_THROW(committed_capture_for(falcon, Numerics::FP32, false), ConfigError);
  EXPECT_THROW(committed_capture_for(falcon, Numerics::BF16, true), ConfigError);  // no bf16.recompute here
}

TEST_F(CommittedCaptures, LayerTypesMustRepeatTheCapturesPattern) {
  const std::string gemma2_26 = config(R"({"model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 6,
      "tie_word_embeddings": true, "rope_parameters": {"rope_type": "default", "rope_theta": 50000.0},
      "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "full_attention"]})");
  EXPECT_EQ(committed_capture_for(gemma2_26, Numerics::BF16_MIXED, false), capture("gemma2.autocast-bf16.json.gz"));
  const std::string all_full = config(R"({"model_type": "gemma2", "layer_types": ["full_attention", "full_attention"]})");
  EXPECT_THROW(committed_capture_for(all_full, Numerics::BF16_MIXED, false), ConfigError);
  const std::string yarn = config(R"({"model_type": "gemma2", "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0}})");
  EXPECT_THROW(committed_capture_for(yarn, Numerics::BF16_MIXED, false), ConfigError);
}

TEST_F(CommittedCaptures, AFamilyWithoutCapturesIsNone) {
  EXPECT_EQ(committed_capture_for(config(R"({"model_type": "mixtral", "hidden_size": 4096})"), Numerics::BF16_MIXED, false),
            std::nullopt);
}

// Our scripts' layer: model.py's structure takes ours/gpt.*, model_llama.py's ours/llama.*, in the
// run's numerics and recompute; one structural difference, or numerics without a capture, none.
TEST(CommittedCapturesOfScripts, OurScriptsStructuresTakeTheirCaptures) {
  const fs::path root = fs::temp_directory_path() / ("trainsim_ours_" + std::to_string(::getpid()));
  fs::create_directories(root / "hf");
  fs::create_directories(root / "ours");
  for (const char* f : {"gpt.autocast-bf16.json.gz", "gpt.bf16.recompute.json.gz", "llama.autocast-bf16.json.gz"}) {
    std::ofstream(root / "ours" / f) << "";
  }
  ::setenv("TRAINSIM_CAPTURES", (root / "hf").c_str(), 1);
  ModelSpec gpt;  // reports/validation/measured/h200x1/h200x1_single_L28-h4096_mb1x2.model.json
  gpt.layers = 28, gpt.hidden = 4096, gpt.heads = 32, gpt.kv_heads = 32, gpt.ffn_hidden = 16384, gpt.vocab = 50304;
  gpt.seq_len = 2048, gpt.dropout = false, gpt.attention = AttentionImpl::FLASH;
  ModelSpec llama = gpt;  // h200x1_single_llama_L16-h4096_mb1x2.model.json
  llama.kv_heads = 8, llama.ffn_hidden = 14336, llama.vocab = 128256, llama.tied_embeddings = false, llama.biases = false;
  llama.norm = NormKind::RMSNORM, llama.mlp = MlpKind::SWIGLU, llama.position = PositionKind::ROTARY;
  const auto ours = [&](const char* f) { return std::optional<std::string>((root / "ours" / f).string()); };
  EXPECT_EQ(committed_capture_of_scripts(gpt, Numerics::BF16_MIXED, false), ours("gpt.autocast-bf16.json.gz"));
  EXPECT_EQ(committed_capture_of_scripts(gpt, Numerics::BF16, true), ours("gpt.bf16.recompute.json.gz"));
  EXPECT_EQ(committed_capture_of_scripts(llama, Numerics::BF16_MIXED, false), ours("llama.autocast-bf16.json.gz"));
  EXPECT_EQ(committed_capture_of_scripts(gpt, Numerics::BF16_MIXED, true), std::nullopt) << "no such file";
  EXPECT_EQ(committed_capture_of_scripts(gpt, Numerics::FP16_MIXED, false), std::nullopt) << "no fp16 captures";
  ModelSpec other = gpt;
  other.dropout = true;
  EXPECT_EQ(committed_capture_of_scripts(other, Numerics::BF16_MIXED, false), std::nullopt) << "dropout";
  other = gpt;
  other.attention = AttentionImpl::MATERIALIZED;
  EXPECT_EQ(committed_capture_of_scripts(other, Numerics::BF16_MIXED, false), std::nullopt) << "materialized attention";
  other = llama;
  other.tied_embeddings = true;
  EXPECT_EQ(committed_capture_of_scripts(other, Numerics::BF16_MIXED, false), std::nullopt) << "a tied Llama";
  other = gpt;
  other.kv_heads = 8;
  EXPECT_EQ(committed_capture_of_scripts(other, Numerics::BF16_MIXED, false), std::nullopt) << "a GPT with grouped heads";
  other = gpt;
  other.huggingface_config = "config.json";
  EXPECT_EQ(committed_capture_of_scripts(other, Numerics::BF16_MIXED, false), std::nullopt) << "a Hugging Face model";
  ::unsetenv("TRAINSIM_CAPTURES");
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainsim::wl
