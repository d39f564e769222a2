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

// Horizontal bar charts: one row per category (e.g. a strategy family), one value per series in
// each row. Stacked: the series add up along the row (a step-time breakdown); grouped: one thin
// bar per series (memory per tier), optionally on a log axis. A row without values (NaN in every
// series) is drawn with its `note` instead ("does not fit").
struct BarChart {
  std::string title;
  std::string value_label;  // the axis, with its unit
  std::vector<std::string> categories;
  std::vector<std::string> notes;  // per category, shown when the row has no value
  std::vector<Series> series;      // label and y (one value per category; x unused)
  bool stacked = true;
  bool log_scale = false;
};

std::string bar_chart_svg(const BarChart& chart);

}  // namespace trainsim::reports
