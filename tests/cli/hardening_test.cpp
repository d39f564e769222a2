// Every input case of the hardening issue (issue 7, "Why"), through the real CLI: each is exit
// code 2 with its message, or the correct answer; none is an internal error, a crash or a run
// that exhausts the machine. (Output cases: output_test.cpp. The second round, issue 43:
// reader_limits_test.cpp, framework_arguments_test.cpp, messages_test.cpp.)
#include "cli_cases.hpp"

namespace trainsim::test {
namespace {

std::string fixtures(const ScratchDir& dir) {
  const nlohmann::json dgx2 = read_source_json("hwprofiles/dgx2.json");
  const std::string dgx2_text = dgx2.dump(2);
  // A key given twice in each of the three kinds of input.
  std::string dup = dgx2_text;
  dup.replace(dup.find("\"node_count\""), 0, "\"node_count\": 560,\n  ");
  dir.write("dup_profile.json", dup);
  dir.write("dup_strategy.json", "{\"schema_version\": 1,\n \"zero\": 3,\n \"zero\": 0}");
  std::string model = read_source_json("workloads/models/gpt3-175b.json").dump(2);
  model.replace(model.find("\"layers\""), 0, "\"layers\": 96,\n    ");
  dir.write("dup_model.json", model);
  // 10^9 layers.
  nlohmann::json huge = read_source_json("workloads/models/gpt3-175b.json");
  huge["architecture"]["layers"] = 1000000000;
  dir.write("huge_model.json", huge.dump());
  // 100,000 nested arrays in the provenance.
  std::string deep = dgx2_text;
  deep.replace(deep.find("\"provenance\": {") + 15, 0,
               "\"x\": " + std::string(100000, '[') + std::string(100000, ']') + ",");
  dir.write("deep.json", deep);
  nlohmann::json p = dgx2;
  p["gpu"]["memory_GiB"] = 1e10;
  dir.write("huge_gpu.json", p.dump());
  p = dgx2;
  p["intra_node"]["link_GBps"] = 1e-300;
  dir.write("tiny_link.json", p.dump());
  std::string overflow = dgx2_text;
  overflow.replace(overflow.find("\"node_count\": ") + 14, 2, "1e999");
  dir.write("overflow.json", overflow);
  p = dgx2;
  p["gpu"]["peak_TFLOPs"] = {{"fp32", 15.7}};
  dir.write("fp32_only.json", p.dump());
  nlohmann::json llama = read_source_json("tests/data/llama2-7b-config.json");
  llama["head_dim"] = 256;
  dir.write("head_dim.json", llama.dump());
  llama = read_source_json("tests/data/llama2-7b-config.json");
  llama["torch_dtype"] = "int8";
  dir.write("int8.json", llama.dump());
  std::filesystem::create_directories(dir.path() / "a_directory");
  return dir.path().string();
}

TEST(Hardening, EveryInputCaseOfTheIssueIsExit2WithItsMessage) {
  ScratchDir dir;
  const std::string d = fixtures(dir);
  const std::vector<Case> cases = {
      {"profile from /dev/zero", "memory --model gpt2-1.5b --hw /dev/zero",
       "/dev/zero: (file): expected a readable regular file of at most 16 MiB, got a character device"},
      {"model from /dev/urandom", "memory --model /dev/urandom",
       "/dev/urandom: (file): expected a readable regular file of at most 16 MiB, got a character device"},
      {"strategy from /dev/zero", "memory --model gpt2-1.5b --strategy /dev/zero", "/dev/zero: (file): expected a"},
      {"DeepSpeed config from /dev/zero", "memory --model gpt2-1.5b --deepspeed /dev/zero", "/dev/zero: (file): expected a"},
      {"10^9 layers", "memory --model {dir}/huge_model.json",
       "{dir}/huge_model.json: architecture.layers: expected an integer in [1, 10000], got 1000000000"},
      {"100,000 nested arrays", "memory --model gpt2-1.5b --hw {dir}/deep.json",
       "{dir}/deep.json: provenance.x[0]...: expected objects and arrays nested at most 64 deep"},
      {"duplicate profile key", "memory --model gpt2-1.5b --hw {dir}/dup_profile.json",
       "{dir}/dup_profile.json: node_count: expected each key once in an object, got \"node_count\" twice"},
      {"duplicate strategy key", "memory --model gpt2-1.5b --strategy {dir}/dup_strategy.json",
       "{dir}/dup_strategy.json: zero: expected each key once in an object, got \"zero\" twice: at line 2, column 2 "
       "(value 3) and again at line 3, column 2"},
      {"duplicate model key", "memory --model {dir}/dup_model.json",
       "{dir}/dup_model.json: architecture.layers: expected each key once in an object, got \"layers\" twice"},
      {"a GPU of 1e10 GiB", "memory --model gpt2-1.5b --hw {dir}/huge_gpu.json",
       "{dir}/huge_gpu.json: gpu.memory_GiB: expected a number in (0, 16384] (GiB), got 10000000000.0"},
      {"a link of 1e-300 GB/s", "simulate --model gpt2-1.5b --hw {dir}/tiny_link.json",
       "{dir}/tiny_link.json: intra_node.link_GBps: expected a number in [0.01, 100000] (GB/s), got 1e-300"},
      {"a number of 1e999", "memory --model gpt2-1.5b --hw {dir}/overflow.json",
       "{dir}/overflow.json: node_count: expected a number within the range of a double"},
      {"head_dim of another width", "memory --model {dir}/head_dim.json",
       "{dir}/head_dim.json: head_dim: expected hidden_size / num_attention_heads = 128"},
      {"torch_dtype int8", "memory --model {dir}/int8.json", "{dir}/int8.json: torch_dtype: expected \"bfloat16\""},
      {"built-in model relabelled by Megatron arguments",
       "memory --model gpt2-1.5b --megatron-args \"--num-layers 96 --hidden-size 12288 --num-attention-heads 96\"",
       "--megatron-args: --num-layers: expected the layer count as gpt2-1.5b has it (48)"},
      {"contradictory virtual pipeline arguments",
       "memory --hw dgx-a100 --gpus 64 --megatron-args \"--num-layers 96 --hidden-size 12288 --num-attention-heads 96 "
       "--pipeline-model-parallel-size 8 --virtual-pipeline-model-parallel-size 2 "
       "--num-layers-per-virtual-pipeline-stage 3\"",
       "--num-layers-per-virtual-pipeline-stage: expected either it or --virtual-pipeline-model-parallel-size"},
      {"a directory as --model", "memory --model {dir}/a_directory/",
       "{dir}/a_directory/: (file): expected a readable regular file of at most 16 MiB, got a directory"},
      {"--micro-batch 0", "memory --model gpt2-1.5b --micro-batch 0",
       "trainsim: error: --micro-batch: expected a whole number >= 1, got 0\n"},
      {"a flag given twice", "memory --model gpt2-1.5b --gpus 4 --gpus 8",
       "trainsim: error: --gpus: expected once, got it 2 times\n"},
  };
  expect_refused(cases, d);
}

TEST(Hardening, CasesWithAnAnswerGiveTheRightOne) {
  // 10^18 parameters: 16 bytes each with ZeRO-0 (ZeRO Sec. 5), beyond 2^63, written as a
  // floating-point number rather than a wrapped negative integer.
  const auto big = run_trainsim("memory --params 1e18 --format json");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const auto j = nlohmann::json::parse(big.out);
  EXPECT_DOUBLE_EQ(j["per_gpu"]["model_states_bytes"].get<double>(), 1.6e19);
  EXPECT_FALSE(j["per_gpu"]["fits"].get<bool>());
  // Megatron-LM arguments quoted as a shell quotes them.
  const auto quoted = run_trainsim("memory --model gpt2-1.5b --megatron-args \"--data-path 'a b' --lr 1e-4\" --format json");
  ASSERT_EQ(quoted.exit_code, 0) << quoted.err;
  const auto q = nlohmann::json::parse(quoted.out);
  EXPECT_EQ(q["inputs"]["no_effect"].size(), 2u) << q["inputs"]["no_effect"].dump();
  // A profile without the peak the numerics compute in: infeasible with the reason, not
  // an internal error deep in the simulator.
  ScratchDir dir;
  nlohmann::json p = read_source_json("hwprofiles/dgx2.json");
  p["gpu"]["peak_TFLOPs"] = {{"fp32", 15.7}};
  const std::string fp32_only = dir.write("fp32_only.json", p.dump());
  const auto no_peak = run_trainsim("simulate --model gpt2-1.5b --gpus 4 --zero 3 --hw " + fp32_only + " --format json");
  ASSERT_EQ(no_peak.exit_code, 0) << no_peak.err;
  const auto n = nlohmann::json::parse(no_peak.out);
  EXPECT_FALSE(n["fits"].get<bool>());
  EXPECT_NE(n["infeasible_reason"].get<std::string>().find("has no fp16 peak (gpu.peak_TFLOPs lists fp32)"), std::string::npos)
      << n["infeasible_reason"];
  // A step of 2^26 micro-batches replayed in full is refused before anything is built, naming the
  // limit; folded (the default), it replays a few and extrapolates.
  const auto huge =
      run_trainsim("simulate --model gpt2-1.5b --gpus 16 --zero 3 --global-batch 1073741824 --no-fold --format json");
  ASSERT_EQ(huge.exit_code, 0) << huge.err;
  const auto h = nlohmann::json::parse(huge.out);
  EXPECT_FALSE(h["fits"].get<bool>());
  EXPECT_NE(h["infeasible_reason"].get<std::string>().find("beyond trainsim's limit of 2 million"), std::string::npos)
      << h["infeasible_reason"];
  const auto folded = run_trainsim("simulate --model gpt2-1.5b --gpus 16 --zero 3 --global-batch 1073741824 --format json");
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_TRUE(nlohmann::json::parse(folded.out)["fits"].get<bool>());
  // And with numerics it has, it simulates.
  const auto fp32 = run_trainsim("simulate --model gpt2-1.5b --gpus 4 --zero 3 --precision fp32 --hw " + fp32_only);
  EXPECT_EQ(fp32.exit_code, 0) << fp32.err;
}

}  // namespace
}  // namespace trainsim::test
