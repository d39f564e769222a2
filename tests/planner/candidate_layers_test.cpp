// The layer each candidate of a plan is costed with (planner/candidate_layers.hpp): a Hugging Face
// config of a family with committed captures takes, per candidate of a PyTorch stack, the capture
// `simulate` takes for that strategy, scaled to the candidate's micro-batch. The config here is the
// committed Llama capture's own (workloads/captures/hf/llama.config.json: hidden 256, 8 heads of 32,
// 2 key/value heads, FFN 704, vocabulary 1024, 4 layers), planned at sequence 128.
#include "candidate_layers.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <map>
#include <string>

#include "captured_model.hpp"
#include "config_error.hpp"
#include "model_loader.hpp"
#include "test_support.hpp"

namespace trainsim::planner {
namespace {

const std::string CONFIG = "workloads/captures/hf/llama.config.json";

Framework framework(const std::string& stack, wl::ModelSpec& m) {
  m.numerics = wl::Numerics::BF16_MIXED;  // the PyTorch stacks' (the config names no torch_dtype)
  FrameworkFlags f;
  if (!stack.empty()) f.stack = stack;
  return resolve_framework(f, m);
}

wl::Strategy candidate(wl::StackKind kind, std::int64_t micro_batch, int zero = 0) {
  wl::Strategy s;
  s.gpus = s.dp = 2;
  s.zero_stage = zero;
  s.stack.kind = kind;
  s.micro_batch = micro_batch;
  s.global_batch = 8;
  s.seq = 128;
  return s;
}

// The weight GEMMs of the captured layer's forward, by module: {m, n, k}.
std::map<std::string, std::array<std::int64_t, 3>> forward_gemms(const wl::ModelSpec& m) {
  std::map<std::string, std::array<std::int64_t, 3>> out;
  for (const wl::CapturedOp& op : m.capture->doc.layers.front().forward.ops) {
    if (op.gemm && !op.gemm->role.empty()) out[op.gemm->role] = {op.gemm->m.value, op.gemm->n.value, op.gemm->k.value};
  }
  return out;
}

std::int64_t attention_batch(const wl::ModelSpec& m) {
  for (const wl::CapturedOp& op : m.capture->doc.layers.front().forward.ops) {
    if (op.attention) return op.attention->b.value;
  }
  return 0;
}

// Twice the micro-batch doubles the rows (m = b x s) of every weight's GEMM and the attention's
// batch, and leaves the weights' sides alone. By hand, at sequence 128: q_proj and o_proj [b*128 x
// 256 x 256], k_proj and v_proj 64 wide (2 key/value heads of 32), gate_proj and up_proj 704 wide,
// down_proj reading 704.
TEST(CandidateLayers, TwiceTheMicroBatchDoublesTheCapturedGemmsRows) {
  wl::ModelSpec m = wl::resolve_model(test::source_path(CONFIG), "--model");
  const Framework f = framework("pytorch", m);
  const CandidateLayers layers(m, f, 128);
  const CandidateLayers::Layer one = layers.for_candidate(candidate(wl::StackKind::PYTORCH_DDP, 1));
  const CandidateLayers::Layer two = layers.for_candidate(candidate(wl::StackKind::PYTORCH_DDP, 2));
  ASSERT_FALSE(one.issue || two.issue);
  ASSERT_TRUE(one.model->capture && two.model->capture);
  using Shape = std::array<std::int64_t, 3>;
  const std::map<std::string, Shape> at1 = forward_gemms(*one.model), at2 = forward_gemms(*two.model);
  const std::map<std::string, Shape> expected1 = {{"q_proj", {128, 256, 256}},   {"k_proj", {128, 64, 256}},
                                                  {"v_proj", {128, 64, 256}},    {"o_proj", {128, 256, 256}},
                                                  {"gate_proj", {128, 704, 256}}, {"up_proj", {128, 704, 256}},
                                                  {"down_proj", {128, 256, 704}}};
  EXPECT_EQ(at1, expected1);
  for (const auto& [role, shape] : expected1) {
    EXPECT_EQ(at2.at(role), (Shape{2 * shape[0], shape[1], shape[2]})) << role;
  }
  EXPECT_EQ(attention_batch(*one.model), 1);
  EXPECT_EQ(attention_batch(*two.model), 2);
  // The costs the replay runs are those shapes: the first GEMM of the forward, q_proj.
  const wl::LayerCost& c2 = two.model->capture->costs.layers.at(two.model->capture->layer_kind).cost;
  ASSERT_FALSE(c2.forward.gemms.empty());
  EXPECT_DOUBLE_EQ(c2.forward.gemms.front().m, 256);
  EXPECT_DOUBLE_EQ(c2.forward.gemms.front().n, 256);
  EXPECT_DOUBLE_EQ(c2.forward.gemms.front().k, 256);
  // Autocast under DDP; FSDP2's layer computes on bf16 parameters with no autocast: the pure bf16 capture.
  EXPECT_NE(layers.capture_of(candidate(wl::StackKind::PYTORCH_DDP, 2)).find("llama.autocast-bf16.json.gz#"), std::string::npos);
  const wl::Strategy fsdp = candidate(wl::StackKind::PYTORCH_FSDP, 2, 3);
  ASSERT_FALSE(layers.for_candidate(fsdp).issue);
  EXPECT_NE(layers.capture_of(fsdp).find("llama.bf16.json.gz#"), std::string::npos);
  const std::vector<std::string> basis = layers.basis();
  ASSERT_EQ(basis.size(), 3u);
  EXPECT_NE(basis[0].find("from the committed capture workloads/captures/hf/llama.autocast-bf16.json.gz (autocast-bf16)"), std::string::npos)
      << basis[0];
  EXPECT_NE(basis[0].find("micro-batch (1, 2)"), std::string::npos) << basis[0];
}

// A stack that runs its own layer keeps the hand-written one, and says so; a family known only from
// its captures cannot be planned for it.
TEST(CandidateLayers, OtherStacksKeepTheHandWrittenLayerVisibly) {
  wl::ModelSpec m = wl::resolve_model(test::source_path(CONFIG), "--model");
  const Framework f = framework("", m);
  const CandidateLayers layers(m, f, 128);
  wl::Strategy s = candidate(wl::StackKind::IDEALIZED, 1);
  const CandidateLayers::Layer l = layers.for_candidate(s);
  EXPECT_FALSE(l.issue);
  EXPECT_FALSE(l.model->capture);
  EXPECT_TRUE(layers.capture_of(s).empty());
  ASSERT_EQ(layers.basis().size(), 1u);
  EXPECT_NE(layers.basis()[0].find("candidates of stack idealized: trainsim's hand-written layer"), std::string::npos) << layers.basis()[0];

  wl::ModelSpec qwen = wl::resolve_model(test::source_path("workloads/captures/hf/qwen2.config.json"), "--model");
  const Framework megatron = framework("megatron", qwen);
  EXPECT_THROW(CandidateLayers(qwen, megatron, 128), ConfigError);
}

// A candidate no capture can cost is dropped with the reason, and the answer says so: here a captures
// folder (TRAINSIM_CAPTURES) holds Llama's autocast capture without recompute only, so the candidates
// that recompute have none, as `simulate` would refuse them.
TEST(CandidateLayers, ACandidateNoCaptureCostsIsDroppedWithTheReason) {
  test::ScratchDir dir;
  for (const std::string file : {"llama.config.json", "llama.effective_config.json", "llama.autocast-bf16.json.gz"}) {
    dir.write(file, test::read_file(test::source_path("workloads/captures/hf/" + file)));
  }
  ::setenv("TRAINSIM_CAPTURES", dir.path().c_str(), 1);
  wl::ModelSpec m = wl::resolve_model(test::source_path(CONFIG), "--model");
  const Framework f = framework("pytorch-ddp", m);
  const CandidateLayers layers(m, f, 128);
  wl::Strategy recomputes = candidate(wl::StackKind::PYTORCH_DDP, 1);
  recomputes.recompute = wl::Recompute::FULL;
  const CandidateLayers::Layer dropped = layers.for_candidate(recomputes);
  const CandidateLayers::Layer kept = layers.for_candidate(candidate(wl::StackKind::PYTORCH_DDP, 1));
  const std::vector<std::string> basis = layers.basis();
  ::unsetenv("TRAINSIM_CAPTURES");
  ASSERT_TRUE(dropped.issue);
  EXPECT_EQ(dropped.issue->reason, "layer-capture");
  EXPECT_NE(dropped.issue->message.find("--precision"), std::string::npos) << dropped.issue->message;
  EXPECT_FALSE(kept.issue);
  std::string all;
  for (const std::string& line : basis) all += line + "\n";
  EXPECT_NE(all.find("some candidates of stack pytorch-ddp: not costed"), std::string::npos) << all;
}

}  // namespace
}  // namespace trainsim::planner
