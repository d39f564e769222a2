#pragma once
// The project's SVG charts, hand-written and dependency-free apart from fmt, so that every command
// draws with the same code: trainsim compare, trainsim validate, trainsim-calibrate and
// trainsim-bench. Each chart kind keeps the geometry and number format its committed files were
// drawn with (the tests compare them byte for byte), so the kinds differ in size and style.

#include <string>
#include <vector>

namespace trainsim::svg {

// --- Medians with min-max whiskers (calibration summaries) ----------------------------------
// Log-scale x (sizes, FLOPs, threads), linear y from zero, one colour per series.

enum class AxisFormat { PLAIN, BYTES };

struct WhiskerPoint {
  double x = 0;
  double y = 0;   // the median
  double lo = 0;  // whisker: min
  double hi = 0;  // whisker: max
};

struct WhiskerSeries {
  std::string name;
  std::vector<WhiskerPoint> points;  // drawn in x order
  bool lines = true;                 // false: markers only (unordered clouds such as GEMM shapes)
};

struct WhiskerPlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  AxisFormat x_format = AxisFormat::PLAIN;
  bool log_x = true;
  std::vector<WhiskerSeries> series;
};

std::string whisker_plot_svg(const WhiskerPlot& plot);
// "64K", "1M", "2G" for powers of two; plain numbers otherwise.
std::string axis_label(double value, AxisFormat format);

// --- Lines through points, optionally on log axes (the simulator's cost curve) --------------

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

// --- Horizontal bar charts (trainsim compare) ------------------------------------------------
// One row per category (e.g. a strategy family), one value per series in each row. Stacked: the
// series add up along the row (a step-time breakdown); grouped: one thin bar per series (memory
// per tier), optionally on a log axis. A row without values (NaN in every series) is drawn with
// its `note` instead ("does not fit").
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

// --- Predicted against measured (trainsim validate) ------------------------------------------
// A scatter on log axes with the diagonal and the tolerance band, and signed errors as
// horizontal bars; points and bars inside the band are green, outside red.

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

}  // namespace trainsim::svg
