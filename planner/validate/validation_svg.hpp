#pragma once
// The validation report's two chart kinds as SVG text: predicted against measured on log axes
// with the diagonal and the tolerance band, and signed errors as horizontal bars.

#include <string>
#include <vector>

namespace trainsim::planner {

struct ScatterPoint {
  double measured = 0, predicted = 0;
  std::string label;
};
struct ErrorBar {
  std::string label;
  double error_pct = 0;
};

std::string scatter_svg(const std::string& title, const std::vector<ScatterPoint>& points, double band_pct);
std::string error_bars_svg(const std::string& title, const std::vector<ErrorBar>& bars, double band_pct);

}  // namespace trainsim::planner
