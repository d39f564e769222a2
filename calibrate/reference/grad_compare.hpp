#pragma once
// Comparing a gradient measured in bf16 on the GPU with the CPU fp64 reference, tensor by tensor.
// The measure is the relative L2 error ||g - g_ref|| / ||g_ref|| per tensor: bf16 keeps 8
// significant bits (unit roundoff 2^-9 = 0.2%), and a step of a few dozen bf16 GEMMs and
// reductions lands near 1% (0.5% measured on H200), so the check's limit is 2e-2; an indexing or
// transposition bug gives errors of order 1.

#include <string>
#include <vector>

#include "gpt_layout.hpp"

namespace trainsim::calibrate::ref {

struct TensorError {
  std::string name;
  double rel_l2 = 0;
  double ref_norm = 0;
};

struct GradComparison {
  std::vector<TensorError> tensors;
  TensorError worst;
  bool passed(double limit) const { return worst.rel_l2 <= limit; }
};

GradComparison compare_gradients(const ParamLayout& layout, const std::vector<float>& measured,
                                 const std::vector<double>& reference);

// |a - b| / |b|; used for the loss.
double relative_error(double a, double b);

}  // namespace trainsim::calibrate::ref
