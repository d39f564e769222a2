#pragma once
// The CPU fp64 reference of the reference step's GPT: forward, mean cross-entropy over the
// micro-batch's tokens and the exact gradient by hand-written backward passes. It is the yardstick
// the GPU step is compared with (tests and `reference --check`), and is itself checked against
// central finite differences (tests/calibrate/reference_test.cpp).

#include <vector>

#include "gpt_layout.hpp"

namespace trainsim::calibrate::ref {

struct CpuLossAndGrad {
  double loss = 0;
  std::vector<double> grad;  // same flat layout as the parameters (padding 0)
};

// Mean cross-entropy of `batch` under `params` (flat, `layout`).
double cpu_gpt_loss(const GptConfig& c, const ParamLayout& layout, const std::vector<double>& params,
                    const Batch& batch);
CpuLossAndGrad cpu_gpt_loss_and_grad(const GptConfig& c, const ParamLayout& layout, const std::vector<double>& params,
                                     const Batch& batch);

// GPT-2's tanh approximation of GELU (Hendrycks and Gimpel 2016, eq. in sec. 2) and its derivative.
double gelu(double x);
double gelu_grad(double x);

inline constexpr double LN_EPS = 1e-5;

}  // namespace trainsim::calibrate::ref
