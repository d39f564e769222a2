// `trainsim memory` end to end, through the built binary.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.hpp"

namespace trainsim {
namespace {

nlohmann::json memory_json(const std::string& args) {
  const auto r = test::run_trainsim("memory " + args + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(MemoryCli, ZeroThreeOn64GpusHoldsOneSixtyFourthOfSixteenBytes) {
  const auto j = memory_json("--params 7.5e9 --gpus 64 --dp 64 --zero 3");
  EXPECT_EQ(j["per_gpu"]["model_states_bytes"].get<double>(), 1.875e9);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["inputs"]["model"]["params"].get<double>(), 7.5e9);
  for (const char* key : {"params_bytes", "grads_bytes", "optimizer_bytes", "model_states_bytes", "activations_bytes",
                          "buffers_bytes", "total_bytes", "fits"}) {
    EXPECT_TRUE(j["per_gpu"].contains(key)) << key;
  }
  for (const char* key : {"cpu_bytes", "nvme_bytes", "fits_cpu", "fits_nvme"}) {
    EXPECT_TRUE(j["per_node"].contains(key)) << key;
  }
  EXPECT_TRUE(j["provenance"].contains("version"));
}

TEST(MemoryCli, OneTrillionOnOneDgx2LivesOnNvme) {
  const std::string args = "--model megatron-1t --hw dgx2 --nodes 1 --zero 3 --offload-params nvme --offload-optimizer nvme";
  const auto j = memory_json(args);
  const double params = j["inputs"]["model"]["params"].get<double>();
  EXPECT_NEAR(params, 1.008e12, 1e9);
  const auto& placement = j["per_gpu"]["placement"];
  for (const char* cls : {"params", "grads", "optimizer"}) {
    EXPECT_EQ(placement[cls]["gpu"].get<double>(), 0.0) << cls;
    EXPECT_GT(placement[cls]["nvme"].get<double>(), 0.0) << cls;
  }
  // ~16 TB of model states on the node's NVMe (30.7 TB), which holds them.
  EXPECT_NEAR(j["per_node"]["nvme_bytes"].get<double>() / 1e12, 16.13, 0.01);
  EXPECT_TRUE(j["per_node"]["fits_nvme"].get<bool>());
  EXPECT_TRUE(j["per_node"]["fits_cpu"].get<bool>());
  // Without recompute the activations of 128 layers cannot fit a 32 GB GPU: said, not hidden.
  EXPECT_FALSE(j["per_gpu"]["fits"].get<bool>());
  EXPECT_EQ(j["overflow"], nlohmann::json::array({"gpu"}));

  const auto table = test::run_trainsim("memory " + args);
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("on NVMe"), std::string::npos);
  EXPECT_NE(table.out.find("OVERFLOWS"), std::string::npos);
  EXPECT_NE(table.out.find("Model states of the whole model: 16.13 TB"), std::string::npos) << table.out;

  const auto fits = memory_json(args + " --recompute full --offload-activations cpu");
  EXPECT_TRUE(fits["fits"].get<bool>());
}

TEST(MemoryCli, SameInputsSameBytes) {
  const std::string args = "memory --model gpt3-175b --hw dgx-a100 --nodes 8 --tp 8 --pp 4 --sp --recompute selective --format json";
  const auto a = test::run_trainsim(args);
  const auto b = test::run_trainsim(args);
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
}

TEST(MemoryCli, AcceptsEveryInputSource) {
  test::ScratchDir dir;
  const std::string ds = dir.write("ds.json", R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})");
  const auto from_ds = memory_json("--model gpt2-1.5b --deepspeed " + ds);
  EXPECT_EQ(from_ds["inputs"]["strategy"]["zero"], 2);
  EXPECT_EQ(from_ds["inputs"]["strategy"]["global_batch"], 2 * 4 * 16);
  EXPECT_EQ(from_ds["inputs"]["model"]["precision"], "bf16-mixed");

  const auto from_megatron = memory_json(
      "--hw dgx-a100 --gpus 3072 --megatron-args \"--tensor-model-parallel-size 8 --pipeline-model-parallel-size 64 "
      "--num-layers 128 --hidden-size 25600 --num-attention-heads 160 --seq-length 2048 --max-position-embeddings 2048 "
      "--micro-batch-size 1 --global-batch-size 3072 --sequence-parallel --recompute-activations\"");
  EXPECT_EQ(from_megatron["inputs"]["strategy"]["dp"], 6);
  EXPECT_EQ(from_megatron["inputs"]["model"]["layers"], 128);

  const auto from_hf = memory_json("--model " + test::source_path("tests/data/gpt2-xl-config.json") + " --gpus 1");
  EXPECT_EQ(from_hf["inputs"]["model"]["params"].get<double>(), 1557611200.0);
  EXPECT_TRUE(from_hf["inputs"]["model"].contains("ignored_hf_keys"));

  const std::string strategy = dir.write("s.json", R"({"schema_version": 1, "tp": 8, "zero": 1})");
  const auto overridden = memory_json("--model gpt3-175b --hw dgx-a100 --nodes 2 --strategy " + strategy + " --tp 4");
  EXPECT_EQ(overridden["inputs"]["strategy"]["tp"], 4);  // flags override files
  EXPECT_EQ(overridden["inputs"]["strategy"]["zero"], 1);
}

TEST(MemoryCli, CsvHasOneRowPerStage) {
  const auto r = test::run_trainsim("memory --model gpt3-175b --hw dgx-a100 --nodes 4 --tp 8 --pp 4 --format csv");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5);
}

TEST(MemoryCli, OutputFileIsWrittenWhole) {
  test::ScratchDir dir;
  const std::string out = (dir.path() / "m.json").string();
  const auto r = test::run_trainsim("memory --params 1e9 --gpus 8 --zero 2 --format json -o " + out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NO_THROW(nlohmann::json::parse(test::read_file(out)));
}

TEST(MemoryCli, TooManyNodesIsAnInfeasibleAnswer) {
  const auto j = memory_json("--model gpt3-175b --hw dgx-a100 --nodes 1000 --tp 8");
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_EQ(j["infeasible_reason"], "the cluster dgx-a100 has 560 nodes; this configuration needs 1000");
}

}  // namespace
}  // namespace trainsim
