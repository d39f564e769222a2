// `plan` over a Hugging Face config of a family with committed captures costs each candidate of a
// PyTorch stack from the capture `simulate` takes for it (planner/candidate_layers.hpp): a ranked
// candidate's step is the one `simulate` gives the same strategy, and the answer says where its
// layers came from. The configs are the committed captures' own (workloads/captures/hf/), small
// enough to plan in seconds.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace trainsim {
namespace {

std::string config(const std::string& name) { return test::source_path("workloads/captures/hf/" + name + ".config.json"); }

nlohmann::json plan_json(const std::string& args) {
  const auto r = test::run_trainsim("plan " + args + " --format json --quiet --no-cache");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

// Each ranked candidate of the plan for `stack`, simulated on its own: the same capture, step and peak.
void expect_ranked_as_simulated(const std::string& stack) {
  const std::string model = config("llama");
  const std::string question = "--model " + model + " --precision bf16-mixed --hw h200x4-measured --gpus 2 --global-batch 8 --seq 128 --stack " + stack;
  const nlohmann::json j = plan_json(question);
  ASSERT_FALSE(j["ranked"].empty());
  ASSERT_TRUE(j.contains("layer_basis"));
  EXPECT_NE(j["layer_basis"].dump().find("from the committed capture workloads/captures/hf/llama."), std::string::npos)
      << j["layer_basis"];
  EXPECT_FALSE(j["accuracy_captured_layers"].is_null());
  for (const nlohmann::json& e : j["ranked"]) {
    ASSERT_TRUE(e["layer_capture"].is_string()) << e["description"];
    if (stack.starts_with("pytorch-fsdp")) {
      EXPECT_NE(e["layer_capture"].get<std::string>().find("/llama.bf16."), std::string::npos) << e["layer_capture"];
    }
    test::ScratchDir dir;
    const std::string file = dir.write("candidate.json", e["strategy"].dump());
    const auto sim = test::run_trainsim("simulate --model " + model + " --precision bf16-mixed --hw h200x4-measured --strategy " + file + " --format json");
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
    const nlohmann::json s = nlohmann::json::parse(sim.out);
    EXPECT_EQ(s["inputs"]["model"]["layer_capture"], e["layer_capture"]) << e["description"];
    EXPECT_DOUBLE_EQ(s["step_time_s"].get<double>(), e["step_time_s"].get<double>()) << e["description"];
    EXPECT_DOUBLE_EQ(s["peak_reserved_bytes"].get<double>(), e["peak_reserved_bytes"].get<double>()) << e["description"];
  }
}

// --stack pytorch ranks pipelines and DDP first here; --stack pytorch-fsdp ranks FSDP2, whose layer is
// the pure bf16 capture.
TEST(PlanCaptures, ACandidatesStepIsSimulatesOfTheSameStrategy) {
  for (const std::string stack : {"pytorch --top 3", "pytorch-fsdp --top 2"}) {
    SCOPED_TRACE(stack);
    expect_ranked_as_simulated(stack);
  }
}

// The table says it too, in its Basis line and the captured runs' accuracy.
TEST(PlanCaptures, TheTableSaysTheLayersCameFromTheCapture) {
  const auto r = test::run_trainsim("plan --model " + config("llama") +
                                    " --precision bf16-mixed --hw h200x4-measured --gpus 2 --stack pytorch --global-batch 8 --seq 128 --top 1 --quiet --no-cache");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the head from the committed capture workloads/captures/hf/llama.autocast-bf16.json.gz"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Basis: a captured layer is costed as `simulate` costs it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("With the layers from captures (reports/validation/captured_models):"), std::string::npos) << r.out;
}

// Without a PyTorch stack every candidate runs its stack's own layer: the hand-written one, said so.
// A family trainsim knows only from its captures (Qwen2) plans under a PyTorch stack, and is refused
// for another, naming --stack.
TEST(PlanCaptures, OtherStacksKeepTheHandWrittenLayerAndSaySo) {
  const auto llama = test::run_trainsim("plan --model " + config("llama") +
                                        " --precision bf16-mixed --hw h200x4-measured --gpus 2 --global-batch 8 --seq 128 --top 1 --quiet --no-cache");
  ASSERT_EQ(llama.exit_code, 0) << llama.err;
  EXPECT_NE(llama.out.find("Basis: candidates of stack idealized: trainsim's hand-written layer"), std::string::npos) << llama.out;
  EXPECT_EQ(llama.out.find("With the layers from captures"), std::string::npos) << llama.out;

  const nlohmann::json qwen = plan_json("--model " + config("qwen2") + " --precision bf16-mixed --hw h200x4-measured --gpus 2 --stack pytorch --global-batch 8 --seq 128 --top 1");
  ASSERT_EQ(qwen["ranked"].size(), 1u);
  EXPECT_NE(qwen["ranked"][0]["layer_capture"].get<std::string>().find("workloads/captures/hf/qwen2."), std::string::npos);
  const auto refused = test::run_trainsim("plan --model " + config("qwen2") + " --precision bf16-mixed --hw h200x4-measured --gpus 2 --stack megatron --quiet --no-cache");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--stack"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace trainsim
