// Every bad input: its own message naming the file or flag and the key, exit code 2, nothing on
// standard output and no output file.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.hpp"

namespace trainsim {
namespace {

struct BadInput {
  const char* name;
  std::string args;  // may contain {dir}, replaced by a scratch directory holding fixtures
  std::string message;
};

std::string fixtures(const test::ScratchDir& dir) {
  nlohmann::json profile = test::read_source_json("hwprofiles/dgx2.json");
  profile["intra_node"]["link_GBps"] = -150;
  dir.write("negative.json", profile.dump());
  profile = test::read_source_json("hwprofiles/dgx2.json");
  profile["gpu"]["memory"] = 32;
  dir.write("nounit.json", profile.dump());
  profile = test::read_source_json("hwprofiles/dgx2.json");
  profile["gpu"]["count_per_node"] = "16";
  dir.write("wrongtype.json", profile.dump());
  dir.write("broken.json", "{\"schema_version\": 1,");
  dir.write("ds.json", R"({"zero_optimization": {"stage": 3, "offload_parm": {"device": "cpu"}}})");
  dir.write("t5.json", R"({"model_type": "t5", "is_encoder_decoder": true, "d_model": 512, "num_heads": 8, "num_layers": 6})");
  dir.write("qwen2.json", R"({"model_type": "qwen2", "hidden_size": 1536, "num_attention_heads": 12, "num_key_value_heads": 2,
                              "intermediate_size": 8960, "num_hidden_layers": 28, "vocab_size": 151936})");
  return dir.path().string();
}

std::string expand(std::string s, const std::string& dir) {
  for (auto pos = s.find("{dir}"); pos != std::string::npos; pos = s.find("{dir}")) s.replace(pos, 5, dir);
  return s;
}

TEST(BadInput, EachCaseHasItsOwnMessageAndExitCode2AndWritesNothing) {
  test::ScratchDir dir;
  const std::string d = fixtures(dir);
  const std::vector<BadInput> cases = {
      {"unknown profile key", "--model gpt2-1.5b --hw {dir}/nounit.json",
       "{dir}/nounit.json: gpu.memory: expected a unit in the key name: \"memory_GiB\""},
      {"negative bandwidth", "--model gpt2-1.5b --hw {dir}/negative.json",
       "{dir}/negative.json: intra_node.link_GBps: expected a number in [0.01, 100000] (GB/s), got -150"},
      {"wrong type", "--model gpt2-1.5b --hw {dir}/wrongtype.json",
       "{dir}/wrongtype.json: gpu.count_per_node: expected an integer in [1, 1024], got \"16\""},
      {"broken JSON", "--model gpt2-1.5b --hw {dir}/broken.json", "{dir}/broken.json: (document): expected valid JSON"},
      {"dp x tp x pp", "--model gpt3-175b --hw dgx-a100 --gpus 64 --dp 4 --tp 8",
       "--dp: expected dp x tp x pp = GPUs: 4 x 8 x 1 = 32 but the GPU count is 64"},
      {"heads and tp", "--model gpt2-1.5b --gpus 2 --tp 2",
       "--tp: expected a divisor of the attention heads (25) of gpt2-1.5b, got 2"},
      {"layers and pp x vpp", "--model gpt2-1.5b --hw dgx-a100 --gpus 64 --pp 32 --vpp 2",
       "--vpp: expected pp x vpp (32 x 2) at most the 48 layers of gpt2-1.5b, got 64"},
      {"unknown model", "--model gpt5", "--model: expected a built-in model ("},
      {"unknown cluster", "--params 1e9 --hw dgx9", "--hw: expected a built-in cluster ("},
      {"unknown flag", "--params 1e9 --tensor-parallel 2", "The following arguments were not expected: 2 --tensor-parallel"},
      {"bad enum flag", "--params 1e9 --offload-params disk", "--offload-params: expected one of \"none\", \"cpu\", \"nvme\""},
      {"negative flag", "--params 1e9 --tp -2", "--tp"},
      {"bad DeepSpeed key", "--model gpt2-1.5b --deepspeed {dir}/ds.json",
       "{dir}/ds.json: zero_optimization.offload_parm: expected one of the known keys"},
      {"unknown Megatron argument", "--model gpt2-1.5b --megatron-args \"--tensor-model-parallel 2\"",
       "--megatron-args: --tensor-model-parallel: expected a Megatron-LM argument trainsim knows"},
      {"encoder-decoder Hugging Face model", "--model {dir}/t5.json",
       "{dir}/t5.json: is_encoder_decoder: expected false (a decoder-only causal language model), got true"},
      {"Hugging Face family without a capture", "--model {dir}/qwen2.json",
       "{dir}/qwen2.json: model_type: expected a family with a hand-written layer (gpt2, gpt_neox, llama, bert), or this one "
       "with a capture of its layer: record it with `trainsim capture --hf-config {dir}/qwen2.json"},
      {"missing file", "--model gpt2-1.5b --deepspeed {dir}/absent.json",
       "{dir}/absent.json: (file): expected a readable regular file of at most 16 MiB, got a path that does not exist"},
      {"no model", "--hw dgx2", "--model: expected a model"},
      {"model and params", "--model gpt2-1.5b --params 1e9", "--params: expected either --model or --params"},
  };
  std::set<std::string> messages;
  for (const auto& c : cases) {
    const std::string out = (dir.path() / "answer.json").string();
    const auto r = test::run_trainsim("memory " + expand(c.args, d) + " --format json -o " + out);
    const std::string expected = expand(c.message, d);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << c.name << ":\n  expected: " << expected << "\n  got: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.name << ": a failed run must not leave an output file";
    EXPECT_TRUE(messages.insert(r.err).second) << c.name << ": message not distinct: " << r.err;
  }
}

}  // namespace
}  // namespace trainsim
