#include "model_params.hpp"

#include <gtest/gtest.h>

#include "model_loader.hpp"
#include "printed_digits.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

TEST(MegatronFormula, ThousandBillionModelIs1008B) {
  // Narayanan et al. 2021, Table 1: 128 layers, hidden 25600, vocabulary 51200, sequence 2048
  // gives 1008 billion parameters.
  const double p = megatron_param_formula(128, 25600, 51200, 2048);
  EXPECT_EQ(std::round(p / 1e9), 1008.0);
  EXPECT_NEAR(p, 1008038707200.0, 0.5);  // 12 l h^2 + 13 l h + (V + s) h, exactly
  // Our per-tensor count adds only the final layer norm (2h) the formula leaves out.
  const ModelSpec m = builtin_model("megatron-1t");
  EXPECT_NEAR(total_params(m) - p, 2.0 * 25600, 0.01);
}

TEST(MegatronFormula, AgreesWithPerTensorCountForEveryGptStyleZooModel) {
  for (const auto& name : builtin_model_names()) {
    const ModelSpec m = builtin_model(name);
    if (m.head != HeadKind::LM) continue;
    const double formula = megatron_param_formula(m.layers, m.hidden, m.vocab, m.seq_len);
    EXPECT_NEAR(total_params(m) - formula, 2.0 * m.hidden, 0.01) << name;
  }
}

TEST(ModelZoo, EveryModelMatchesItsPublishedCount) {
  const std::vector<std::string> expected = {"bert-large", "gpt2-1.5b", "megatron-8.3b", "turing-nlg-17b", "gpt-13b",
                                             "zero-100b", "gpt3-175b", "mt-nlg-530b", "megatron-1t", "zinf-0.1t",
                                             "zinf-0.5t", "zinf-1t", "zinf-10t", "zinf-100t"};
  const auto names = builtin_model_names();
  for (const auto& name : expected) {
    ASSERT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    const ModelSpec m = builtin_model(name);
    ASSERT_TRUE(m.published) << name;
    EXPECT_TRUE(test::agrees_to_significant_digits(total_params(m), m.published->params, m.published->significant_digits))
        << name << ": ours " << total_params(m) << ", published " << m.published->params << " ("
        << m.published->significant_digits << " significant digits)";
  }
}

TEST(ModelZoo, ZeroInfinityRowsMatchTheirModelStateColumn) {
  // ZeRO-Infinity Table 1 (seeds) prints model states as 20 bytes per parameter, counting the
  // transformer layers as 12 l h^2 (embeddings, biases and norms left out), in TiB:
  // 1.83, 9.16, 18.31, 182.81, 1845.70. Our per-tensor layer count adds 13 l h for biases and
  // norms, a relative 13/(12h) more.
  const std::pair<const char*, const char*> rows[] = {
      {"zinf-0.1t", "1.83"}, {"zinf-0.5t", "9.16"}, {"zinf-1t", "18.31"}, {"zinf-10t", "182.81"}, {"zinf-100t", "1845.70"}};
  for (const auto& [name, printed] : rows) {
    const ModelSpec m = builtin_model(name);
    const double l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden);
    const double tib = 20.0 * 12.0 * l * h * h / 1099511627776.0;
    EXPECT_TRUE(test::agrees_to_printed_digit(tib, printed)) << name << ": " << tib << " vs " << printed;
    EXPECT_DOUBLE_EQ(static_cast<double>(m.layers * layer_params(m)), 12.0 * l * h * h + 13.0 * l * h) << name;
  }
}

TEST(HuggingFace, Gpt2XlConfigGivesThePublished1_5B) {
  const ModelSpec m = load_model_file(test::source_path("tests/data/gpt2-xl-config.json"));
  EXPECT_EQ(m.layers, 48);
  EXPECT_EQ(m.hidden, 1600);
  EXPECT_EQ(m.ffn_hidden, 6400);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_DOUBLE_EQ(total_params(m), 1557611200.0);  // transformers' GPT2LMHeadModel count
  EXPECT_TRUE(test::agrees_to_significant_digits(total_params(m), 1.5e9, 2));
  // Keys that do not change the count are reported, not dropped.
  EXPECT_NE(std::find(m.ignored_keys.begin(), m.ignored_keys.end(), "n_ctx"), m.ignored_keys.end());
}

TEST(HuggingFace, LlamaNeoxAndBertStylesGiveTheirKnownCounts) {
  EXPECT_DOUBLE_EQ(total_params(load_model_file(test::source_path("tests/data/llama2-7b-config.json"))),
                   6738415616.0);
  EXPECT_DOUBLE_EQ(total_params(load_model_file(test::source_path("tests/data/gpt-neox-20b-config.json"))),
                   20554567680.0);
  // BertForPreTraining: BertModel (335,141,888 with the pooler) plus the MLM and NSP heads.
  EXPECT_DOUBLE_EQ(total_params(load_model_file(test::source_path("tests/data/bert-large-uncased-config.json"))),
                   336226108.0);
}

TEST(HuggingFace, AnEncoderDecoderIsAConfigError) {
  test::ScratchDir dir;
  const std::string path = dir.write("config.json", R"({"model_type": "t5", "is_encoder_decoder": true, "d_model": 512})");
  try {
    load_model_file(path);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "is_encoder_decoder");
  }
}

// A family without a hand-written layer is read for its sizes under each family's spellings
// (transformers' config classes: FalconConfig's num_kv_heads and multi_query, Gemma2Config's head_dim)
// and marked as taking its layer from a capture.
TEST(HuggingFace, AFamilyWithoutAHandWrittenLayerIsReadForItsSizes) {
  test::ScratchDir dir;
  const ModelSpec gemma2 = load_model_file(dir.write("gemma2.json", R"({"model_type": "gemma2", "hidden_size": 2304,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216, "num_hidden_layers": 26,
      "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096, "attention_dropout": 0.0})"));
  EXPECT_TRUE(gemma2.layer_from_capture);
  EXPECT_EQ(gemma2.head_dim(), 256);  // not 2304 / 8 = 288
  EXPECT_EQ(gemma2.kv_hidden(), 1024);
  EXPECT_EQ(gemma2.sliding_window, 4096);
  EXPECT_FALSE(gemma2.dropout);
  const ModelSpec falcon = load_model_file(dir.write("falcon.json", R"({"model_type": "falcon", "hidden_size": 4544,
      "num_attention_heads": 71, "multi_query": true, "num_hidden_layers": 32, "vocab_size": 65024, "hidden_dropout": 0.1})"));
  EXPECT_EQ(falcon.kv_heads, 1);
  EXPECT_EQ(falcon.ffn_hidden, 4 * 4544);
  EXPECT_TRUE(falcon.dropout);
  const ModelSpec qwen2 = load_model_file(dir.write("qwen2.json", R"({"model_type": "qwen2", "hidden_size": 1536,
      "num_attention_heads": 12, "num_key_value_heads": 2, "intermediate_size": 8960, "num_hidden_layers": 28,
      "vocab_size": 151936, "sliding_window": 32768, "use_sliding_window": false})"));
  EXPECT_FALSE(qwen2.sliding_window.has_value());
  try {
    load_model_file(dir.write("no_layers.json", R"({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16,
        "vocab_size": 1000})"));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "num_hidden_layers");
  }
}

TEST(TensorParallel, RankParametersSumToTheWholeLayer) {
  const ModelSpec m = builtin_model("gpt3-175b");
  // Replicated parts (norms, row-parallel biases) appear on every rank, split parts once in total.
  const double replicated = 4.0 * m.hidden + 2.0 * m.hidden;
  EXPECT_DOUBLE_EQ(8 * layer_params_per_tp_rank(m, 8) - 7 * replicated, static_cast<double>(layer_params(m)));
}

TEST(PipelineStages, StagesHoldEveryParameterOnceExceptTheTiedEmbeddingCopy) {
  const ModelSpec m = builtin_model("gpt3-175b");
  double sum = 0;
  for (int stage = 0; stage < 8; ++stage) sum += stage_params_per_rank(m, stage, 8, 1);
  EXPECT_DOUBLE_EQ(sum, total_params(m) + static_cast<double>(m.vocab * m.hidden));
}

}  // namespace
}  // namespace trainsim::wl

namespace trainsim::wl {
namespace {

// parameter_tensors: the tensors a per-parameter framework (FSDP2) shards and copies one by one
// sum to rank_params' figure for each unit, at every tensor-parallel degree, and a GPT layer has
// its 12 (LayerNorm weight and bias twice, four weights, four biases).
TEST(ParameterTensors, SumToTheUnitsOfRankParams) {
  for (const char* name : {"gpt2-1.5b", "bert-large", "megatron-8.3b"}) {
    const ModelSpec m = builtin_model(name);
    for (int tp : {1, 2, 8}) {
      const RankParams r = rank_params(m, tp);
      auto sum = [&](int layer) {
        double s = 0;
        for (double e : parameter_tensors(m, tp, layer)) s += e;
        return s;
      };
      EXPECT_NEAR(sum(-1), r.embedding, 1e-6) << name << " tp " << tp;
      EXPECT_NEAR(sum(0), r.per_layer, 1e-6) << name << " tp " << tp;
      EXPECT_NEAR(sum(static_cast<int>(m.layers)), r.head, 1e-6) << name << " tp " << tp;
    }
  }
  const ModelSpec gpt = builtin_model("gpt2-1.5b");
  const std::vector<double> layer = parameter_tensors(gpt, 1, 3);
  ASSERT_EQ(layer.size(), 12u);
  EXPECT_EQ(layer[2], 1600.0 * 4800);  // fused QKV weight
}

}  // namespace
}  // namespace trainsim::wl
