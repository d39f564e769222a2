#pragma once
// Small, dependency-free SVG line plots for the committed reports (users look before they read).

#include <string>
#include <vector>

namespace trainsim::reports {

struct Series {
  std::string label;
  std::vector<double> x, y;
};

struct PlotSpec {
  std::string title;
  std::string x_label, y_label;
  bool log_x = false, log_y = false;
};

std::string line_plot_svg(const PlotSpec& spec, const std::vector<Series>& series);

}  // namespace trainsim::reports
