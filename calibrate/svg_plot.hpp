#pragma once
// Small hand-written SVG line plots for the calibration summary: log-scale x (sizes, FLOPs,
// threads), linear y from zero, one colour per series, min-max whiskers on every point.

#include <string>
#include <vector>

namespace trainsim::calibrate {

enum class AxisFormat { PLAIN, BYTES };

struct PlotPoint {
  double x = 0;
  double y = 0;   // the median
  double lo = 0;  // whisker: min
  double hi = 0;  // whisker: max
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;  // drawn in x order
  bool lines = true;              // false: markers only (unordered clouds such as GEMM shapes)
};

struct Plot {
  std::string title;
  std::string x_label;
  std::string y_label;
  AxisFormat x_format = AxisFormat::PLAIN;
  bool log_x = true;
  std::vector<PlotSeries> series;
};

std::string render_svg(const Plot& plot);
// "64K", "1M", "2G" for powers of two; plain numbers otherwise.
std::string axis_label(double value, AxisFormat format);

}  // namespace trainsim::calibrate
