#include "grad_compare.hpp"

#include <cmath>
#include <stdexcept>

namespace trainsim::calibrate::ref {

GradComparison compare_gradients(const ParamLayout& layout, const std::vector<float>& measured,
                                 const std::vector<double>& reference) {
  if (measured.size() != layout.total || reference.size() != layout.total) {
    throw std::invalid_argument("compare_gradients: both gradients must have the layout's " +
                                std::to_string(layout.total) + " elements");
  }
  GradComparison out;
  out.worst.rel_l2 = -1;
  for (const Unit& u : layout.units) {
    for (const TensorSlot& t : u.tensors) {
      double diff = 0, norm = 0;
      for (std::size_t i = t.offset; i < t.offset + t.size(); ++i) {
        const double e = static_cast<double>(measured[i]) - reference[i];
        diff += e * e;
        norm += reference[i] * reference[i];
      }
      TensorError te{t.name, std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30), std::sqrt(norm)};
      // A NaN must fail, not compare false against the limit.
      if (std::isnan(te.rel_l2)) te.rel_l2 = INFINITY;
      if (te.rel_l2 > out.worst.rel_l2) out.worst = te;
      out.tensors.push_back(te);
    }
  }
  return out;
}

double relative_error(double a, double b) {
  const double e = std::fabs(a - b) / std::max(std::fabs(b), 1e-30);
  return std::isnan(e) ? INFINITY : e;
}

}  // namespace trainsim::calibrate::ref
