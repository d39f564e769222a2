// `simulate --capture`: the user's layer as trainsim_capture recorded it replaces trainsim's PyTorch
// layer in the replay's costs (issue 39; workloads/captured_model.hpp). The committed capture of
// reports/validation/scripts/model_llama.py (workloads/captures/) is replayed at its own size and
// at another, and what cannot be costed from a capture is refused naming the flag and the key.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace trainsim {
namespace {

const std::string CAPTURE = "workloads/captures/llama_model_llama_py.recompute.json";

// model_llama.py at the capture's own size (its symbols: h 64, a 4, kv 2, f 176, V 512, L 4).
std::string tiny_llama(const test::ScratchDir& dir) {
  return dir.write("llama_tiny.model.json", R"({"schema_version": 1, "name": "llama_tiny", "description": "model_llama.py, tiny",
    "architecture": {"layers": 4, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn_hidden": 176, "vocab": 512, "seq_len": 32,
      "tied_embeddings": false, "biases": false, "dropout": false, "norm": "rmsnorm", "mlp": "swiglu", "position": "rotary"},
    "numerics": {"precision": "bf16-mixed", "attention": "flash", "fp32_residual": true}})");
}

std::string run_args(const std::string& model) {
  return "simulate --model " + model + " --hw h200x4-measured --gpus 1 --stack pytorch --micro-batch 2 --seq 32 --global-batch 4 "
         "--recompute full";
}

// Every FLOP the replay runs is one the capture recorded: two micro-batches of the ends' phases and
// four layers' forward, recompute and backward, summed here from the capture's own ops.
TEST(CaptureCli, TheReplaysFlopsAreTheCapturedOps) {
  test::ScratchDir dir;
  const auto r = test::run_trainsim(run_args(tiny_llama(dir)) + " --capture " + test::source_path(CAPTURE) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json doc = test::read_source_json(CAPTURE);
  auto flops = [](const nlohmann::json& ops) {
    double f = 0;
    for (const auto& o : ops) {
      const std::string c = o["class"];
      if (c == "gemm" || c == "batched_gemm" || c == "attention_fwd" || c == "attention_bwd") f += o["flops"].get<double>();
    }
    return f;
  };
  double ends = 0;
  for (const char* p : {"embed.forward", "head.forward", "head.backward", "embed.backward"}) ends += flops(doc["phases"][p]["ops"]);
  const auto& layer = doc["layers"][0]["phases"];
  const double per_layer = flops(layer["forward"]["ops"]) + flops(layer["recompute"]["ops"]) + flops(layer["backward"]["ops"]);
  const double expected = 2 * (ends + 4 * per_layer);
  const double replayed = j["hardware_tflops_per_gpu"].get<double>() * 1e12 * j["step_time_s"].get<double>();
  EXPECT_NEAR(replayed / expected, 1.0, 1e-9);
  EXPECT_NE(j["assumptions"].dump().find("from the capture"), std::string::npos);
}

TEST(CaptureCli, TheAnswerSaysItsLayerIsTheCaptures) {
  test::ScratchDir dir;
  const std::string model = tiny_llama(dir);
  const auto with = test::run_trainsim(run_args(model) + " --capture " + test::source_path(CAPTURE));
  const auto without = test::run_trainsim(run_args(model));
  ASSERT_EQ(with.exit_code, 0) << with.err;
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_NE(with.out.find("Basis: each layer's, the embedding's and the head's kernels from the capture"), std::string::npos);
  EXPECT_EQ(without.out.find("from the capture"), std::string::npos);
  EXPECT_NE(with.out, without.out);
}

// The capture scales to another size of its architecture: model_llama.py at 16 layers of 4096.
TEST(CaptureCli, ACaptureScalesToTheModelsSize) {
  const std::string model = test::source_path("reports/validation/measured/llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2.model.json");
  const auto r = test::run_trainsim("simulate --model " + model + " --hw h200x2-measured --gpus 1 --stack pytorch --micro-batch 1 "
                                    "--global-batch 2 --capture " + test::source_path(CAPTURE) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_NE(j["assumptions"].dump().find("micro-batch 1, sequence 2048"), std::string::npos) << j["assumptions"];
}

TEST(CaptureCli, WhatACaptureCannotCostIsRefused) {
  test::ScratchDir dir;
  const std::string model = tiny_llama(dir);
  const std::string capture = " --capture " + test::source_path(CAPTURE);
  // Not a PyTorch stack.
  const auto ds = test::run_trainsim("simulate --model " + model + " --hw h200x4-measured --gpus 2 --micro-batch 2 --seq 32 "
                                     "--stack deepspeed" + capture);
  EXPECT_EQ(ds.exit_code, 2);
  EXPECT_NE(ds.err.find("--stack"), std::string::npos) << ds.err;
  EXPECT_NE(ds.err.find("a PyTorch stack"), std::string::npos) << ds.err;
  // A capture in fp32 where the run trains under bf16 autocast.
  const auto fp32 = test::run_trainsim(run_args(model) + " --precision bf16-mixed --capture " + test::source_path("workloads/captures/gpt_model_py.json"));
  EXPECT_EQ(fp32.exit_code, 2);
  EXPECT_NE(fp32.err.find("run.precision"), std::string::npos) << fp32.err;
  // Another architecture of the same symbols: GPT-2's layer (biases, LayerNorm, GELU) has other parameters.
  const auto gpt = test::run_trainsim("simulate --model gpt2-1.5b --hw h200x4-measured --gpus 1 --stack pytorch --precision bf16-mixed "
                                      "--micro-batch 2 --global-batch 2" + capture);
  EXPECT_EQ(gpt.exit_code, 2) << gpt.out;
  EXPECT_NE(gpt.err.find("params"), std::string::npos) << gpt.err;
  EXPECT_NE(gpt.err.find("a capture of the same architecture"), std::string::npos) << gpt.err;
  // Not a capture at all.
  const std::string junk = dir.write("junk.json", R"({"kind": "trainsim.capture", "schema_version": 9})");
  const auto bad = test::run_trainsim(run_args(model) + " --capture " + junk);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("junk.json"), std::string::npos) << bad.err;
}


// A measured run predicted from a capture: `validate --capture` replays the run's step with the
// captured layer (the run's own model, scaled to). The committed capture was recorded on the CPU
// (PyTorch 1.13: SDPA's math path where the run used flash attention), so the prediction differs
// from the hand-written layer's; that it runs, and says so, is what is checked here.
TEST(CaptureCli, AMeasuredRunIsPredictedFromACapture) {
  const std::string run = test::source_path("reports/validation/measured/llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2.json");
  const auto with = test::run_trainsim("validate --measured " + run + " --capture " + test::source_path(CAPTURE));
  const auto without = test::run_trainsim("validate --measured " + run);
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_NE(with.out.find("h200x1_single_llama_L16-h4096_mb1x2"), std::string::npos) << with.out;
  EXPECT_NE(with.out, without.out);
}

// trainsim capture hands every argument, --help included, to the package; a Python that cannot be
// started is exit 2 with its name, not a crash.
TEST(CaptureCli, CaptureRunsThePackageOrSaysWhyNot) {
  ::setenv("TRAINSIM_PYTHON", "/nonexistent/python3", 1);
  const auto missing = test::run_trainsim("capture --help");
  ::unsetenv("TRAINSIM_PYTHON");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("could not start /nonexistent/python3"), std::string::npos) << missing.err;
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no /usr/bin/python3 with torch";
  ::setenv("TRAINSIM_PYTHON", "/usr/bin/python3", 1);
  const auto help = test::run_trainsim("capture --help");
  const auto check = test::run_trainsim("capture --check " + test::source_path(CAPTURE));
  ::unsetenv("TRAINSIM_PYTHON");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("--hf-config"), std::string::npos) << help.out;
  EXPECT_EQ(check.exit_code, 0) << check.err;
}

}  // namespace
}  // namespace trainsim
