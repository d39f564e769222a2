// The reference step's CPU side (calibrate/reference/): the parameter count against the measured
// PyTorch module, the layout's alignment, the fp64 reference gradient against central finite
// differences, and the gradient comparison's verdicts.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/cpu_gpt.hpp"
#include "reference/gpt_layout.hpp"
#include "reference/grad_compare.hpp"

namespace trainsim::calibrate::ref {
namespace {

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

TEST(ReferenceLayout, ParamCountMatchesThePyTorchModule) {
  // reports/validation/measured/gpt-small-data-parallel-h200x2/h200x1_single_L24-h1024_mb4x2.json: params_total 355919872.
  GptConfig c{24, 1024, 16, 50304, 2048, 4};
  EXPECT_EQ(gpt_param_count(c), 355919872);
  const ParamLayout l = make_layout(c, 4);
  std::int64_t counted = 0;
  for (const Unit& u : l.units) {
    EXPECT_EQ(u.size % (64 * 4), 0u);
    for (const TensorSlot& t : u.tensors) {
      EXPECT_EQ(t.offset % 64, 0u) << t.name;
      EXPECT_LE(t.offset + t.size(), u.offset + u.size) << t.name;
      counted += static_cast<std::int64_t>(t.size());
    }
  }
  EXPECT_EQ(counted, 355919872);
  EXPECT_EQ(l.units.size(), 26u);
}

TEST(ReferenceLayout, BadShapesNameTheOption) {
  GptConfig c{2, 64, 5, 128, 32, 2};
  try {
    validate(c);
    FAIL() << "heads 5 does not divide hidden 64";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--heads"), std::string::npos) << e.what();
  }
  c.heads = 4;
  c.layers = 0;
  EXPECT_THROW(validate(c), std::invalid_argument);
}

TEST(ReferenceLayout, PipelineStagesSplitLayersLikeThePyTorchRows) {
  EXPECT_EQ(split_layers(24, 2), (std::vector<int>{12, 12}));
  EXPECT_EQ(split_layers(36, 4), (std::vector<int>{9, 9, 9, 9}));
  EXPECT_EQ(split_layers(26, 4), (std::vector<int>{7, 7, 6, 6}));
  EXPECT_EQ(split_layers(4, 4), (std::vector<int>{1, 1, 1, 1}));
}

TEST(ReferenceCpu, GradientMatchesCentralFiniteDifferences) {
  // Small enough for finite differences over a sample of every tensor.
  GptConfig c{2, 16, 2, 24, 8, 2};
  const ParamLayout layout = make_layout(c, 1);
  std::vector<double> p = to_double(initial_params(layout));
  // Larger weights than GPT-2's 0.02 so every path (attention, GELU curvature) carries signal.
  for (double& v : p) v *= 5.0;
  for (const Unit& u : layout.units) {
    for (const TensorSlot& t : u.tensors) {
      if (t.name.ends_with(".g")) {
        for (std::size_t i = 0; i < t.size(); ++i) p[t.offset + i] = 1.0 + (p[t.offset + i] - 5.0) * 0.1;
      }
    }
  }
  const Batch batch = synthetic_batch(c, 7);
  const CpuLossAndGrad r = cpu_gpt_loss_and_grad(c, layout, p, batch);
  EXPECT_GT(r.loss, 0);
  const double eps = 1e-5;
  int checked = 0;
  for (const Unit& u : layout.units) {
    for (const TensorSlot& t : u.tensors) {
      for (std::size_t k = 0; k < 5; ++k) {
        const std::size_t i = t.offset + (k * 7919) % t.size();
        const double saved = p[i];
        p[i] = saved + eps;
        const double up = cpu_gpt_loss(c, layout, p, batch);
        p[i] = saved - eps;
        const double down = cpu_gpt_loss(c, layout, p, batch);
        p[i] = saved;
        const double fd = (up - down) / (2 * eps);
        EXPECT_NEAR(r.grad[i], fd, 1e-6 + 1e-4 * std::fabs(fd)) << t.name << " element " << i - t.offset;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * (2 + 12 * 2 + 2));
}

TEST(ReferenceCpu, LossOfUniformLogitsIsLogVocab) {
  // All-zero weights give uniform logits: the loss is exactly ln V.
  GptConfig c{1, 16, 2, 24, 8, 2};
  const ParamLayout layout = make_layout(c, 1);
  std::vector<double> p(layout.total, 0.0);
  EXPECT_NEAR(cpu_gpt_loss(c, layout, p, synthetic_batch(c, 1)), std::log(24.0), 1e-12);
}

TEST(ReferenceCompare, FlagsTheWrongTensorAndNaN) {
  GptConfig c{1, 16, 2, 24, 8, 2};
  const ParamLayout layout = make_layout(c, 1);
  const std::vector<float> init = initial_params(layout);
  const std::vector<double> ref = to_double(init);
  std::vector<float> same = init;
  EXPECT_TRUE(compare_gradients(layout, same, ref).passed(1e-6));
  std::vector<float> swapped = init;
  const TensorSlot& w = layout.layer(0, W_O);
  for (std::size_t i = 0; i < w.rows; ++i) {  // a transposition bug
    for (std::size_t j = 0; j < i; ++j) std::swap(swapped[w.offset + i * w.cols + j], swapped[w.offset + j * w.cols + i]);
  }
  const GradComparison bad = compare_gradients(layout, swapped, ref);
  EXPECT_FALSE(bad.passed(0.05));
  EXPECT_EQ(bad.worst.name, "h.0.proj.w");
  std::vector<float> nan = init;
  nan[layout.final_ln(LNF_B).offset] = NAN;
  EXPECT_FALSE(compare_gradients(layout, nan, ref).passed(1e9));
  EXPECT_GT(relative_error(NAN, 1.0), 1e9);
}

}  // namespace
}  // namespace trainsim::calibrate::ref
