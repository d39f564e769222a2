// `trainsim simulate` end to end, through the built binary.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "test_support.hpp"

namespace trainsim {
namespace {

TEST(SimulateCli, JsonCarriesThePublicKeys) {
  const auto r = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --zero 2 --micro-batch 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"schema_version", "inputs", "step_time_s", "tflops_per_gpu", "tokens_per_s", "samples_per_s",
                          "bubble_fraction", "peak_memory_bytes", "per_gpu", "fits", "infeasible_reason", "provenance"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  // The 16 data-parallel ranks of the node are identical: one simulated GPU stands for them.
  ASSERT_EQ(j["per_gpu"].size(), 1u);
  EXPECT_EQ(j["per_gpu"][0]["ranks"].get<int>(), 16);
  const auto& busy = j["per_gpu"][0]["busy_s"];
  double sum = 0;
  for (const char* c : {"compute", "exposed_communication", "exposed_offload_io", "optimizer", "idle"}) sum += busy[c].get<double>();
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-9);  // the categories partition the step
  // tokens/s = global batch x sequence / step time.
  EXPECT_NEAR(j["tokens_per_s"].get<double>(), 32.0 * 1024 / j["step_time_s"].get<double>(), 1e-6);
}

TEST(SimulateCli, SameInputsSameBytes) {
  const std::string args = "simulate --model gpt2-1.5b --hw dgx2 --nodes 2 --zero 3 --recompute full --micro-batch 4 --format json";
  EXPECT_EQ(test::run_trainsim(args).out, test::run_trainsim(args).out);
}

TEST(SimulateCli, TraceOpensAsChromeTraceJson) {
  test::ScratchDir dir;
  const std::string trace = (dir.path() / "t.json").string();
  const auto r = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --zero 3 --offload-params cpu "
                                    "--offload-optimizer cpu --recompute full --micro-batch 2 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(test::read_file(trace));
  ASSERT_TRUE(j.contains("traceEvents"));
  std::set<std::string> phases, processes;
  for (const auto& e : j["traceEvents"]) {
    phases.insert(e["ph"].get<std::string>());
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_TRUE(phases.count("X") && phases.count("C") && phases.count("M"));
  EXPECT_TRUE(processes.count("stage 0 (node 0, GPU 0), for 16 ranks") && processes.count("node 0 host") &&
              processes.count("fabric (rings)"))
      << j["traceEvents"][0].dump();
}

TEST(SimulateCli, DoesNotFitIsAnAnswerWithItsReason) {
  const auto r = test::run_trainsim("simulate --model megatron-1t --hw dgx2 --nodes 1 --zero 3 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_TRUE(j["step_time_s"].is_null());
  EXPECT_NE(j["infeasible_reason"].get<std::string>().find("GPU memory"), std::string::npos);
}

TEST(SimulateCli, CombinationsTheStacksDoNotRunAreBadInputWithExitCode2) {
  test::ScratchDir dir;
  const std::string out = (dir.path() / "s.json").string();
  const auto offload =
      test::run_trainsim("simulate --model gpt3-175b --hw dgx-a100 --nodes 8 --tp 8 --pp 8 --zero 1 --offload-optimizer cpu -o " + out);
  EXPECT_EQ(offload.exit_code, 2);
  EXPECT_NE(offload.err.find("--offload-optimizer: expected none with pipeline parallelism"), std::string::npos) << offload.err;
  const auto async = test::run_trainsim("simulate --model gpt3-175b --hw dgx-a100 --nodes 8 --tp 8 --pp 8 --zero 1 --schedule 2bw "
                                        "--global-batch 64 -o " + out);
  EXPECT_EQ(async.exit_code, 2);
  EXPECT_NE(async.err.find("--zero: expected 0 with PipeDream and 2BW"), std::string::npos) << async.err;
  // simulate does not take --params (a raw count has no layers to replay): it is not among its flags.
  const auto raw = test::run_trainsim("simulate --params 7.5e9 -o " + out);
  EXPECT_EQ(raw.exit_code, 2);
  EXPECT_NE(raw.err.find("The following arguments were not expected: 7.5e9 --params"), std::string::npos) << raw.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(SimulateCli, TensorParallelismAcrossNodesPaysForTheNetwork) {
  // GPT-3 on 64 A100s: tp 16 spans two DGX A100 nodes, so its all-reduces cross 200 Gb/s NICs
  // instead of 300 GB/s NVLink ports; the same layers' tensor-parallel traffic is exposed for much
  // longer than with tp 8 inside a node.
  auto exposed = [](int tp) {
    const auto r = test::run_trainsim(fmt::format(
        "simulate --model gpt3-175b --hw dgx-a100 --gpus 64 --tp {} --pp {} --recompute full --global-batch 16 --format json", tp,
        64 / tp));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["per_gpu"][0]["busy_s"]["exposed_communication"].get<double>();
  };
  EXPECT_GT(exposed(16), 3 * exposed(8));
}

TEST(SimulateCli, DelayedUpdateHidesTheCpuOptimizer) {
  auto step = [](const std::string& extra) {
    const auto r = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --zero 2 --offload-optimizer cpu --micro-batch 2 "
                                      "--format json " + extra);
    return nlohmann::json::parse(r.out)["step_time_s"].get<double>();
  };
  // ZeRO-Offload's delayed update overlaps the CPU step with the next forward and backward
  // (Ren et al. 2021, Sec. 5.2): the step gets shorter, never longer.
  EXPECT_LT(step("--dpu"), step(""));
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// A PyTorch stack's answer carries the reserved peak of its caching allocator as modeled
// (sim/engine/reserved_memory.hpp), at least its allocated peak; the papers' idealized stack, which has
// no allocator, carries none.
TEST(SimulateCli, APyTorchStackShowsItsReservedPeak) {
  const std::string args = "simulate --model gpt2-1.5b --hw h200x4-measured --gpus 2 --stack pytorch-ddp --precision bf16-mixed "
                           "--micro-batch 2";
  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("peak GPU memory reserved"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Basis: reserved peak: the replay's memory events through a model of PyTorch's caching allocator"),
            std::string::npos);
  const auto r = test::run_trainsim(args + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("peak_reserved_bytes"));
  EXPECT_GE(j["peak_reserved_bytes"].get<double>(), j["peak_memory_bytes"].get<double>());

  // Every stack's answer fits by its reserved peak (planner/memory_fit.hpp), the idealized one's too.
  const auto idealized = test::run_trainsim("simulate --model gpt2-1.5b --hw h200x4-measured --gpus 2 --micro-batch 2 --format json");
  ASSERT_EQ(idealized.exit_code, 0) << idealized.err;
  const auto k = nlohmann::json::parse(idealized.out);
  ASSERT_TRUE(k.contains("peak_reserved_bytes"));
  EXPECT_GE(k["peak_reserved_bytes"].get<double>(), k["peak_memory_bytes"].get<double>());
}

// Allocated within the memory, the modeled reserved peak above the usable memory less the headroom:
// it does not fit, and says by how much (30 layers of Llama 3 8B's shape on one H200,
// checkpointed). One truth for memory: the reserved peak decides (planner/memory_fit.hpp).
TEST(SimulateCli, AReservedPeakAboveTheLimitDoesNotFit) {
  test::ScratchDir dir;
  std::string text = test::read_file(std::string(TRAINSIM_SOURCE_DIR) +
                                     "/reports/validation/measured/llama-checkpointing-h200x2/h200x1_single_llama_ac_L16-h4096_mb2x2.model.json");
  const auto at = text.find("\"layers\": 16");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "\"layers\": 30");
  const std::string model = dir.write("llama30.json", text);
  const auto r = test::run_trainsim("simulate --model " + model + " --hw h200x4-measured --gpus 1 --stack pytorch --recompute full "
                                    "--micro-batch 2 --global-batch 4 --precision bf16-mixed --attention flash");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("headroom)  OVERFLOWS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Does not fit: GPU memory: the replay reserves"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainsim
