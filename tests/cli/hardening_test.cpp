// Every input case of the hardening issue (issue 7, "Why"), through the real CLI: each is exit
// code 2 with its message, or the correct answer; none is an internal error, a crash or a run
// that exhausts the machine. (Output cases: output_test.cpp.)
#include <gtest/gtest.h>

#include <zlib.h>

#include <chrono>

#include "test_support.hpp"

namespace trainsim {
namespace {

struct Case {
  const char* name;
  std::string args;     // {dir} is the scratch directory with the fixtures
  std::string message;  // expected on stderr
};

// One gzip member holding `text`: gzip readers read concatenated members as one stream, so a file
// that unpacks to gigabytes is built from a few members, quickly.
std::string gzip_member(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// `head`, then `filler` `repeat` times, then `tail`, gzipped.
std::string gzipped(const std::string& head, const std::string& filler, std::size_t repeat, const std::string& tail) {
  std::string out = gzip_member(head);
  const std::string member = gzip_member(filler);
  for (std::size_t i = 0; i < repeat; ++i) out += member;
  return out + gzip_member(tail);
}

std::string expand(std::string s, const std::string& dir) {
  for (auto pos = s.find("{dir}"); pos != std::string::npos; pos = s.find("{dir}")) s.replace(pos, 5, dir);
  return s;
}

std::string fixtures(const test::ScratchDir& dir) {
  const nlohmann::json dgx2 = test::read_source_json("hwprofiles/dgx2.json");
  const std::string dgx2_text = dgx2.dump(2);
  // A key given twice in each of the three kinds of input.
  std::string dup = dgx2_text;
  dup.replace(dup.find("\"node_count\""), 0, "\"node_count\": 560,\n  ");
  dir.write("dup_profile.json", dup);
  dir.write("dup_strategy.json", "{\"schema_version\": 1,\n \"zero\": 3,\n \"zero\": 0}");
  std::string model = test::read_source_json("workloads/models/gpt3-175b.json").dump(2);
  model.replace(model.find("\"layers\""), 0, "\"layers\": 96,\n    ");
  dir.write("dup_model.json", model);
  // 10^9 layers.
  nlohmann::json huge = test::read_source_json("workloads/models/gpt3-175b.json");
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
  nlohmann::json llama = test::read_source_json("tests/data/llama2-7b-config.json");
  llama["head_dim"] = 256;
  dir.write("head_dim.json", llama.dump());
  llama = test::read_source_json("tests/data/llama2-7b-config.json");
  llama["torch_dtype"] = "int8";
  dir.write("int8.json", llama.dump());
  std::filesystem::create_directories(dir.path() / "a_directory");
  return dir.path().string();
}

TEST(Hardening, EveryInputCaseOfTheIssueIsExit2WithItsMessage) {
  test::ScratchDir dir;
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
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = test::run_trainsim(expand(c.args, d));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string expected = expand(c.message, d);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << c.name << ":\n  expected: " << expected << "\n  got: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name;
    // Refused before anything is allocated: no case reads, allocates or simulates for long.
    EXPECT_LT(seconds, 10.0) << c.name;
  }
}

TEST(Hardening, CasesWithAnAnswerGiveTheRightOne) {
  // 10^18 parameters: 16 bytes each with ZeRO-0 (ZeRO Sec. 5), beyond 2^63, written as a
  // floating-point number rather than a wrapped negative integer.
  const auto big = test::run_trainsim("memory --params 1e18 --format json");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const auto j = nlohmann::json::parse(big.out);
  EXPECT_DOUBLE_EQ(j["per_gpu"]["model_states_bytes"].get<double>(), 1.6e19);
  EXPECT_FALSE(j["per_gpu"]["fits"].get<bool>());
  // Megatron-LM arguments quoted as a shell quotes them.
  const auto quoted = test::run_trainsim("memory --model gpt2-1.5b --megatron-args \"--data-path 'a b' --lr 1e-4\" --format json");
  ASSERT_EQ(quoted.exit_code, 0) << quoted.err;
  const auto q = nlohmann::json::parse(quoted.out);
  EXPECT_EQ(q["inputs"]["no_effect"].size(), 2u) << q["inputs"]["no_effect"].dump();
  // A profile without the peak the numerics compute in: infeasible with the reason, not
  // an internal error deep in the simulator.
  test::ScratchDir dir;
  nlohmann::json p = test::read_source_json("hwprofiles/dgx2.json");
  p["gpu"]["peak_TFLOPs"] = {{"fp32", 15.7}};
  const std::string fp32_only = dir.write("fp32_only.json", p.dump());
  const auto no_peak = test::run_trainsim("simulate --model gpt2-1.5b --gpus 4 --zero 3 --hw " + fp32_only + " --format json");
  ASSERT_EQ(no_peak.exit_code, 0) << no_peak.err;
  const auto n = nlohmann::json::parse(no_peak.out);
  EXPECT_FALSE(n["fits"].get<bool>());
  EXPECT_NE(n["infeasible_reason"].get<std::string>().find("has no fp16 peak (gpu.peak_TFLOPs lists fp32)"), std::string::npos)
      << n["infeasible_reason"];
  // A step of 2^26 micro-batches replayed in full is refused before anything is built, naming the
  // limit; folded (the default), it replays a few and extrapolates.
  const auto huge =
      test::run_trainsim("simulate --model gpt2-1.5b --gpus 16 --zero 3 --global-batch 1073741824 --no-fold --format json");
  ASSERT_EQ(huge.exit_code, 0) << huge.err;
  const auto h = nlohmann::json::parse(huge.out);
  EXPECT_FALSE(h["fits"].get<bool>());
  EXPECT_NE(h["infeasible_reason"].get<std::string>().find("beyond trainsim's limit of 2 million"), std::string::npos)
      << h["infeasible_reason"];
  const auto folded = test::run_trainsim("simulate --model gpt2-1.5b --gpus 16 --zero 3 --global-batch 1073741824 --format json");
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_TRUE(nlohmann::json::parse(folded.out)["fits"].get<bool>());
  // And with numerics it has, it simulates.
  const auto fp32 = test::run_trainsim("simulate --model gpt2-1.5b --gpus 4 --zero 3 --precision fp32 --hw " + fp32_only);
  EXPECT_EQ(fp32.exit_code, 0) << fp32.err;
}

// Issue 43 ("Hardening, second round"), items 3 and 4: framework arguments that would have given
// a silently wrong answer, and trace or directory inputs that were internal errors (exit 1).
TEST(Hardening, SecondRoundInputCasesAreExit2WithTheirMessage) {
  test::ScratchDir dir;
  const std::string d = dir.path().string();
  const std::string ds_head = R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, )";
  dir.write("mics.json", ds_head + R"("zero_optimization": {"stage": 3, "mics_shard_size": 8}})");
  dir.write("hpz.json", ds_head + R"("zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}})");
  dir.write("qw.json", ds_head + R"("zero_optimization": {"stage": 3, "zero_quantized_weights": true}})");
  dir.write("qg.json", ds_head + R"("zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})");
  dir.write("nvme_param.json", ds_head + R"("zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})");
  dir.write("nvme_opt.json", ds_head + R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": null}}})");
  const nlohmann::json llama = test::read_source_json("tests/data/llama2-7b-config.json");
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
  auto trace = [&](const char* file, const std::string& event) {
    dir.write(file, R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "ts": 1000, "dur": 80000}, )" +
                        event + "]}");
  };
  trace("step_inf.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "ts": 1e308, "dur": 5})");
  trace("step_dur.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "ts": 0, "dur": 1e300})");
  trace("memory_huge.json", R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 5, "args": {"Total Allocated": 1e300}})");
  trace("memory_lots.json", R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 5, "args": {"Total Allocated": "lots"}})");
  trace("cat5.json", R"({"ph": "X", "cat": 5, "name": "k", "ts": 1, "dur": 1})");
  trace("ts_x.json", R"({"ph": "X", "cat": "kernel", "name": "k", "ts": "x", "dur": 1})");
  trace("step_ts_x.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": "x", "dur": 1})");
  std::filesystem::create_directories(dir.path() / "loop");
  std::filesystem::create_symlink("self.json", dir.path() / "loop" / "self.json");
  const std::string gpt2 = " --model gpt2-1.5b";
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
      {"Megatron --fp16 --bf16", "memory --model gpt2-1.5b --megatron-args \"--fp16 --bf16\"",
       "--megatron-args: --bf16: expected either --fp16 or --bf16, not both (Megatron-LM's arguments.py asserts it), got both"},
      {"ffn hidden 6401 over tp 8",
       "memory --gpus 8 --megatron-args \"--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --ffn-hidden-size 6401 "
       "--tensor-model-parallel-size 8\"",
       "--megatron-args: --tensor-model-parallel-size: expected a divisor of the MLP hidden size (6401) of megatron-args"},
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
      {"ProfilerStep at ts 1e308", "validate --no-trace --measured {dir}/step_inf.json" + gpt2,
       "{dir}/step_inf.json: traceEvents[1].ts: expected a finite timestamp below 1e18 microseconds"},
      {"ProfilerStep of dur 1e300", "validate --no-trace --measured {dir}/step_dur.json" + gpt2,
       "{dir}/step_dur.json: traceEvents[1].dur: expected a duration from 0 to 8.64e10 microseconds"},
      {"[memory] of 1e300 bytes", "validate --no-trace --measured {dir}/memory_huge.json" + gpt2,
       "{dir}/memory_huge.json: traceEvents[1].args.Total Allocated: expected a number of bytes from 0 to 16 TiB"},
      {"[memory] of \"lots\"", "validate --no-trace --measured {dir}/memory_lots.json" + gpt2,
       "{dir}/memory_lots.json: traceEvents[1].args.Total Allocated: expected a number of bytes from 0 to 16 TiB "
       "(the memory one GPU holds), got \"lots\""},
      {"cat 5", "validate --no-trace --measured {dir}/cat5.json" + gpt2,
       "{dir}/cat5.json: traceEvents[1].cat: expected a string (the event's category, e.g. \"kernel\"), got 5"},
      {"kernel ts \"x\"", "validate --no-trace --measured {dir}/ts_x.json" + gpt2,
       "{dir}/ts_x.json: traceEvents[1].ts: expected a number of microseconds, got \"x\""},
      {"ProfilerStep ts \"x\"", "validate --no-trace --measured {dir}/step_ts_x.json" + gpt2,
       "{dir}/step_ts_x.json: traceEvents[1].ts: expected a number of microseconds, got \"x\""},
      {"symlink loop in a measured directory", "validate --no-trace --measured {dir}/loop",
       "{dir}/loop/self.json: (file): expected a readable measured-run file or directory, got Too many levels of symbolic links"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_trainsim(expand(c.args, d));
    const std::string expected = expand(c.message, d);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << c.name << ":\n  expected: " << expected << "\n  got: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name;
  }
}

// Megatron's block N with N covering every layer of each chunk, and uniform 1, are the full
// recompute trainsim models: answered, with a note that says so, and the same activations as
// --recompute full. With no granularity, Megatron reads neither flag: no effect.
TEST(Hardening, MegatronRecomputeMethodsThatRecomputeEveryLayerAreAnswered) {
  auto activations = [](const std::string& args) {
    const auto r = test::run_trainsim("memory --model gpt2-1.5b --gpus 4 --pp 4 --format json " + args);
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
  const auto none = activations("--megatron-args \"--recompute-method block --recompute-num-layers 4\"");
  EXPECT_NE(none["inputs"]["no_effect"].dump().find("--recompute-method (no --recompute-granularity)"), std::string::npos)
      << none["inputs"].dump();
}

// Issue 43, item 1: the trace and allocator-record readers bound what they unpack, the events and
// elements they hold and the nesting, each an exit-2 error naming the file and the limit, quickly.
TEST(Hardening, GzipBombsAndHugeDocumentsStopAtAStatedLimit) {
  test::ScratchDir dir;
  const std::string d = dir.path().string();
  const std::string mib_of_spaces(std::size_t{1} << 20, ' ');
  // 1100 MiB of spaces in a 1 MB file (the issue's was 5 GB in 4.9 MB).
  dir.write("spaces.trace.json.gz", gzipped("{\"traceEvents\": [", mib_of_spaces, 1100, "]}"));
  // 9 Mi events that are empty arrays, 27 MB unpacked.
  std::string empties;
  for (int i = 0; i < 349525; ++i) empties += "[],";
  dir.write("empties.trace.json.gz", gzipped("{\"traceEvents\": [", empties, 27, "[]]}"));
  // An event nested 100 deep.
  dir.write("deep.trace.json.gz", gzipped("{\"traceEvents\": [", std::string(100, '[') + std::string(100, ']'), 1, "]}"));
  // A kernel name of 17 MiB.
  dir.write("long_name.trace.json.gz",
            gzipped("{\"traceEvents\": [{\"name\": \"", std::string(std::size_t{1} << 20, 'x'), 17, "\"}]}"));
  // An allocator record whose provenance holds 21 Mi numbers, 42 MB unpacked.
  std::string zeros;
  for (int i = 0; i < (1 << 20); ++i) zeros += "0,";
  dir.write("zeros.allocator.rank0.json.gz", gzipped("{\"schema_version\": 1, \"provenance\": [", zeros, 21, "0]}"));
  const std::string gpt2 = " --model gpt2-1.5b";
  const std::vector<Case> cases = {
      {"1100 MiB of spaces", "validate --no-trace --measured {dir}/spaces.trace.json.gz" + gpt2,
       "{dir}/spaces.trace.json.gz: (file): expected a readable profiler trace (Chrome trace JSON, optionally gzipped) of at "
       "most 1024 MiB once unpacked, got more"},
      {"9 Mi empty events", "validate --no-trace --measured {dir}/empties.trace.json.gz" + gpt2,
       "{dir}/empties.trace.json.gz: traceEvents: expected at most 8388608 trace events (the limit on events), got more"},
      {"an event nested 100 deep", "validate --no-trace --measured {dir}/deep.trace.json.gz" + gpt2,
       "{dir}/deep.trace.json.gz: traceEvents[0]: expected objects and arrays nested at most 64 deep (the limit on depth), "
       "got deeper nesting at byte "},
      {"a 17 MiB kernel name", "validate --no-trace --measured {dir}/long_name.trace.json.gz" + gpt2,
       "{dir}/long_name.trace.json.gz: (document): expected strings and numbers of at most 16 MiB each (the limit on a value's "
       "size), got a longer one ending past byte 16777244 of the unpacked text"},
      {"21 Mi values in an allocator record", "validate --allocator-record {dir}/zeros.allocator.rank0.json.gz",
       "{dir}/zeros.allocator.rank0.json.gz: provenance[20971517]: expected at most 20971520 JSON values in the document "
       "(the limit on elements), got more (at line 1, column "},
  };
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = test::run_trainsim(expand(c.args, d));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string expected = expand(c.message, d);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << c.name << ":\n  expected: " << expected << "\n  got: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name;
    EXPECT_LT(seconds, 20.0) << c.name;  // a few seconds; generous for a shared machine
  }
}

// Issue 43, item 5: what the user gave is echoed escaped and cut, names and flags get suggestions,
// and an unwritable HOME only costs the cache.
TEST(Hardening, MessagesEscapeCutAndSuggest) {
  test::ScratchDir dir;
  const std::string d = dir.path().string();
  nlohmann::json p = test::read_source_json("hwprofiles/dgx2.json");
  p[std::string("bad\0key", 7)] = 1;
  dir.write("nul_key.json", p.dump());
  p = test::read_source_json("hwprofiles/dgx2.json");
  p[std::string(5000000, 'k')] = 1;
  dir.write("long_key.json", p.dump());
  std::string dup = "{\"" + std::string(5000000, 'k') + "\": 1, \"" + std::string(5000000, 'k') + "\": 2}";
  dir.write("dup_long_key.json", dup);
  const std::vector<Case> cases = {
      {"a NUL inside a key", "memory --model gpt2-1.5b --hw {dir}/nul_key.json",
       "{dir}/nul_key.json: bad\\x00key: expected one of the known keys"},
      {"a 5 MB key", "memory --model gpt2-1.5b --hw {dir}/long_key.json",
       "{dir}/long_key.json: " + std::string(512, 'k') + "... (5000000 bytes): expected one of the known keys"},
      {"a 5 MB key given twice", "memory --model gpt2-1.5b --hw {dir}/dup_long_key.json",
       "{dir}/dup_long_key.json: " + std::string(512, 'k') + "... (5000000 bytes): expected each key once in an object, got \"" +
           std::string(80, 'k') + "... (5000000 bytes)\" twice: at line 1, column 2 (value 1) and again at line 1, column 5000009"},
      {"a built-in model misspelt", "memory --model gpt3-175",
       "--model: expected a built-in model (\"bert-large\""},
      {"a built-in model misspelt: the suggestion", "memory --model gpt3-175", "got \"gpt3-175\" (did you mean \"gpt3-175b\"?)"},
      {"a built-in cluster misspelt", "memory --model gpt2-1.5b --hw dgx-2", "got \"dgx-2\" (did you mean \"dgx2\"?)"},
      {"a flag misspelt", "memory --model gpt2-1.5b --tpp 2", "for --tpp did you mean --tp?"},
      {"a subcommand misspelt", "memroy --model gpt2-1.5b", "for memroy did you mean memory?"},
      {"an explicit --cache that cannot be created", "plan --model gpt2-1.5b --hw dgx2 --nodes 1 --quiet --cache /proc/trainsim-no/cache",
       "--cache: expected a directory trainsim can create or write for its results cache, got \"/proc/trainsim-no/cache\""},
  };
  for (const auto& c : cases) {
    const auto r = test::run_trainsim(expand(c.args, d));
    const std::string expected = expand(c.message, d);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err.substr(0, 2000);
    EXPECT_NE(r.err.find(expected), std::string::npos) << c.name << ":\n  expected: " << expected.substr(0, 2000)
                                                        << "\n  got: " << r.err.substr(0, 2000);
    EXPECT_LT(r.err.size(), 4096u) << c.name;  // one cut message, not megabytes
    EXPECT_EQ(r.err.find('\0'), std::string::npos) << c.name;
    EXPECT_TRUE(r.out.empty()) << c.name;
  }

  // A profile name with an ANSI escape and a newline: printed escaped in the answer.
  p = test::read_source_json("hwprofiles/dgx2.json");
  p["name"] = "evil\x1b[31m\nname";
  dir.write("ansi.json", p.dump());
  auto r = test::run_trainsim("memory --model gpt2-1.5b --hw " + d + "/ansi.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("evil\\x1b[31m\\nname"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;

  // No HOME to cache in: plan answers without the cache, with one warning.
  r = test::run_command("env -u XDG_CACHE_HOME HOME=/proc/trainsim-no-home " + std::string(TRAINSIM_BINARY) +
                        " plan --model gpt2-1.5b --hw dgx2 --nodes 1 --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  const std::string warning =
      "trainsim: warning: running without the results cache: --cache (default): expected a directory trainsim can create or "
      "write for its results cache, got \"/proc/trainsim-no-home/.cache/trainsim\"";
  EXPECT_EQ(r.err.rfind(warning, 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("warning", warning.size()), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim
