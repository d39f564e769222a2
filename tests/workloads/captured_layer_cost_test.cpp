// Costs of a capture (workloads/captured_layer_cost.hpp) against Megatron's formulas by hand.
#include "captured_layer_cost.hpp"

#include <gtest/gtest.h>

#include "capture_scale.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

const std::string GPT = "workloads/captures/gpt_model_py.json";

double gemm_flops(const PassCost& p) {
  double f = 0;
  for (const auto& g : p.gemms) f += g.flops();
  return f;
}

TEST(CapturedLayerCost, GptLayerGemmFlopsAreMegatrons) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  const CapturedCosts c = captured_costs(doc, 1);
  const LayerCost& layer = c.layers.at("decoder").cost;
  // b = 2, s = 32, h = 64 (f = 4h): Narayanan et al. 2021's 24 b s h^2 for the four Linears plus
  // 4 b s^2 h for the attention products (PyTorch 1.13's math path: full s x s, no causal halving).
  const double b = 2, s = 32, h = 64;
  EXPECT_DOUBLE_EQ(gemm_flops(layer.forward), 24 * b * s * h * h + 4 * b * s * s * h);  // 6815744
  EXPECT_DOUBLE_EQ(gemm_flops(layer.forward), 6815744.0);
  // Backward: dgrad and wgrad of each Linear (2x), and four products for the attention's two.
  EXPECT_DOUBLE_EQ(gemm_flops(layer.backward), 48 * b * s * h * h + 8 * b * s * s * h);
  EXPECT_EQ(layer.forward.gemms.size(), 6u);
  EXPECT_FALSE(layer.forward.fused_attention);  // math path: batched GEMMs and a softmax kernel
}

// Each captured class at the generic calibrated kernel of its access pattern (the capture's classes,
// workloads/capture/SCHEMA.md): a norm at the layernorm's curve, the softmax and the loss at the
// softmax's, an elementwise op at the copy's. The GPT capture's forward has two LayerNorms, one
// softmax (the 1.13 math path) and GELU and residual adds; its head's forward ends in the loss.
TEST(CapturedLayerCost, EachClassTakesTheGenericCurveOfItsAccessPattern) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  const CapturedCosts c = captured_costs(doc, 1);
  int norms = 0, softmaxes = 0, elementwise = 0;
  for (const MemoryKernel& k : c.layers.at("decoder").cost.forward.kernels) {
    const std::string name = k.name;
    if (name == "normalization") {
      EXPECT_EQ(k.generic, KernelClass::LAYERNORM);
      ++norms;
    }
    if (name == "softmax") {
      EXPECT_EQ(k.generic, KernelClass::SOFTMAX);
      ++softmaxes;
    }
    if (name == "elementwise") {
      EXPECT_EQ(k.generic, KernelClass::COPY);
      ++elementwise;
    }
  }
  EXPECT_EQ(norms, 2);
  EXPECT_EQ(softmaxes, 1);
  EXPECT_GT(elementwise, 0);
  int losses = 0;
  for (const MemoryKernel& k : c.head.forward.kernels) {
    if (std::string(k.name) == "loss") {
      EXPECT_EQ(k.generic, KernelClass::SOFTMAX);
      ++losses;
    }
  }
  EXPECT_GT(losses, 0);
}

TEST(CapturedLayerCost, LaunchesAreTheCapturedKernelCounts) {
  for (const char* file : {"workloads/captures/gpt_model_py.json", "workloads/captures/llama_model_llama_py.recompute.json"}) {
    const CaptureDocument doc = load_capture(test::source_path(file));
    const CapturedCosts c = captured_costs(doc, 1);
    for (const auto& [kind, per] : doc.totals.layers) {
      const CapturedLayerCost& l = c.layers.at(kind);
      EXPECT_EQ(l.cost.forward.launches, static_cast<double>(per.at("forward").kernels)) << file;
      EXPECT_EQ(l.cost.backward.launches, static_cast<double>(per.at("backward").kernels)) << file;
      EXPECT_EQ(l.recompute.launches, static_cast<double>(per.at("recompute").kernels)) << file;
    }
    EXPECT_EQ(c.embedding.forward.launches, static_cast<double>(doc.totals.ends.at("embed.forward").kernels));
    EXPECT_EQ(c.head.backward.launches, static_cast<double>(doc.totals.ends.at("head.backward").kernels));
  }
  // The GPT layer by its document's totals: 25 kernels forward, 30 backward.
  const CapturedCosts gpt = captured_costs(load_capture(test::source_path(GPT)), 1);
  EXPECT_EQ(gpt.layers.at("decoder").cost.forward.launches, 25);
  EXPECT_EQ(gpt.layers.at("decoder").cost.backward.launches, 30);
}

TEST(CapturedLayerCost, MemoryKernelsCarryTheCapturedBytes) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  const PassCost fwd = captured_pass_cost(doc, doc.layers[0].forward, 1);
  double bytes = 0;
  for (const auto& o : doc.layers[0].forward.ops) {
    if (o.kernels > 0 && o.cls != OpClass::GEMM && o.cls != OpClass::BATCHED_GEMM) {
      bytes += static_cast<double>(o.bytes_read.value + o.bytes_written.value);
    }
  }
  EXPECT_DOUBLE_EQ(fwd.bytes(), bytes);
  bool softmax = false, norm = false;
  for (const auto& k : fwd.kernels) {
    softmax = softmax || std::string(k.name) == "softmax";
    norm = norm || std::string(k.name) == "normalization";
  }
  EXPECT_TRUE(softmax);
  EXPECT_TRUE(norm);
}

TEST(CapturedLayerCost, TensorParallelHalvesColumnAndRowDimensions) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  const PassCost one = captured_pass_cost(doc, doc.layers[0].forward, 1);
  const PassCost two = captured_pass_cost(doc, doc.layers[0].forward, 2);
  ASSERT_EQ(one.gemms.size(), two.gemms.size());
  // Megatron (Shoeybi et al. 2019, Sec. 3): qkv and fc1 are column-parallel (output features n
  // split), proj and fc2 row-parallel (input features k split); the attention products split by heads.
  // In capture order: qkv [64 x 192 x 64], scores, context, proj [64 x 64 x 64], fc1 [64 x 256 x 64], fc2 [64 x 64 x 256].
  const double expected[6][4] = {{64, 96, 64, 1}, {32, 32, 16, 4}, {32, 16, 32, 4},
                                 {64, 64, 32, 1}, {64, 128, 64, 1}, {64, 64, 128, 1}};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(two.gemms[i].m, expected[i][0]) << i;
    EXPECT_EQ(two.gemms[i].n, expected[i][1]) << i;
    EXPECT_EQ(two.gemms[i].k, expected[i][2]) << i;
    EXPECT_EQ(two.gemms[i].batch, expected[i][3]) << i;
  }
  EXPECT_DOUBLE_EQ(gemm_flops(two), gemm_flops(one) / 2);
  // The backward halves too (dgrad and wgrad split their own dimensions).
  EXPECT_DOUBLE_EQ(gemm_flops(captured_pass_cost(doc, doc.layers[0].backward, 2)),
                   gemm_flops(captured_pass_cost(doc, doc.layers[0].backward, 1)) / 2);
  // Layer norms and residual adds on [b, s, h] stay whole; the softmax over heads halves.
  EXPECT_LT(two.bytes(), one.bytes());
  EXPECT_GT(two.bytes(), one.bytes() / 2);
  EXPECT_EQ(two.launches, one.launches);
  EXPECT_THROW(captured_pass_cost(doc, doc.layers[0].forward, 3), ConfigError);  // 3 does not divide 4 heads
  EXPECT_THROW(captured_pass_cost(doc, doc.layers[0].forward, 0), ConfigError);
}

TEST(CapturedLayerCost, ScaledCaptureCostsTheOtherSize) {
  // The same architecture at h = 256 (a = 8, d = 32), b = 1, s = 128: 24 b s h^2 + 4 b s^2 h again.
  const CaptureDocument doc =
      scale_capture(load_capture(test::source_path(GPT)), {{"a", 8}, {"d", 32}, {"f", 1024}, {"s", 128}, {"P", 128}, {"b", 3}});
  const double b = 3, s = 128, h = 256;
  EXPECT_DOUBLE_EQ(gemm_flops(captured_costs(doc, 1).layers.at("decoder").cost.forward),
                   24 * b * s * h * h + 4 * b * s * s * h);
}

}  // namespace
}  // namespace trainsim::wl
