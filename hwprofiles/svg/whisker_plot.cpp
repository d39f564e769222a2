// Medians with min-max whiskers, as the calibration summaries draw them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "svg_parts.hpp"
#include "svg_plot.hpp"

namespace trainsim::svg {
namespace {

constexpr double WIDTH = 760, HEIGHT = 440;
constexpr double LEFT = 80, RIGHT = 190, TOP = 40, BOTTOM = 60;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// A "nice" step (1, 2 or 5 times a power of ten) giving about five ticks up to `max`.
double nice_step(double max) {
  const double raw = max / 5;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string axis_label(double value, AxisFormat format) {
  char buf[32];
  if (format == AxisFormat::BYTES) {
    const char* units[] = {"", "K", "M", "G", "T"};
    int u = 0;
    double v = value;
    while (v >= 1024 && u < 4) {
      v /= 1024;
      ++u;
    }
    std::snprintf(buf, sizeof(buf), v == std::floor(v) ? "%.0f%s" : "%.1f%s", v, units[u]);
    return buf;
  }
  if (value >= 1e4 || (value > 0 && value < 1e-2)) {
    std::snprintf(buf, sizeof(buf), "%.0e", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%g", value);
  }
  return buf;
}

std::string whisker_plot_svg(const WhiskerPlot& plot) {
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = 0;
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) {
      xmin = std::min(xmin, p.x);
      xmax = std::max(xmax, p.x);
      ymax = std::max({ymax, p.y, p.hi});
    }
  }
  if (!(xmax >= xmin)) xmin = xmax = 1;
  if (ymax <= 0) ymax = 1;
  const double step = nice_step(ymax);
  ymax = std::ceil(ymax / step) * step;
  auto fx = [&](double x) {
    const double a = plot.log_x ? std::log2(xmin) : xmin, b = plot.log_x ? std::log2(xmax) : xmax;
    const double v = plot.log_x ? std::log2(x) : x;
    const double t = b > a ? (v - a) / (b - a) : 0.5;
    return LEFT + t * (WIDTH - LEFT - RIGHT);
  };
  auto fy = [&](double y) { return HEIGHT - BOTTOM - y / ymax * (HEIGHT - TOP - BOTTOM); };

  std::string svg = detail::open_svg(num(WIDTH), num(HEIGHT), 12);
  svg += "<text x=\"" + num(WIDTH / 2 - RIGHT / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
         detail::escape(plot.title, true) + "</text>\n";
  // Axes, grid and tick labels.
  for (double y = 0; y <= ymax * 1.0001; y += step) {
    svg += "<line x1=\"" + num(LEFT) + "\" x2=\"" + num(WIDTH - RIGHT) + "\" y1=\"" + num(fy(y)) + "\" y2=\"" +
           num(fy(y)) + "\" stroke=\"#ddd\"/>\n";
    svg += "<text x=\"" + num(LEFT - 6) + "\" y=\"" + num(fy(y) + 4) + "\" text-anchor=\"end\">" +
           axis_label(y, AxisFormat::PLAIN) + "</text>\n";
  }
  if (plot.log_x) {
    const int lo = static_cast<int>(std::floor(std::log2(xmin))), hi = static_cast<int>(std::ceil(std::log2(xmax)));
    const int stride = std::max(1, (hi - lo) / 10 + 1);
    for (int e = lo; e <= hi; e += stride) {
      const double x = std::ldexp(1.0, e);
      if (x < xmin * 0.999 || x > xmax * 1.001) continue;
      svg += "<line x1=\"" + num(fx(x)) + "\" x2=\"" + num(fx(x)) + "\" y1=\"" + num(TOP) + "\" y2=\"" +
             num(HEIGHT - BOTTOM) + "\" stroke=\"#eee\"/>\n";
      svg += "<text x=\"" + num(fx(x)) + "\" y=\"" + num(HEIGHT - BOTTOM + 16) + "\" text-anchor=\"middle\">" +
             axis_label(x, plot.x_format) + "</text>\n";
    }
  }
  svg += "<rect x=\"" + num(LEFT) + "\" y=\"" + num(TOP) + "\" width=\"" + num(WIDTH - LEFT - RIGHT) + "\" height=\"" +
         num(HEIGHT - TOP - BOTTOM) + "\" fill=\"none\" stroke=\"black\"/>\n";
  svg += "<text x=\"" + num(LEFT + (WIDTH - LEFT - RIGHT) / 2) + "\" y=\"" + num(HEIGHT - 18) +
         "\" text-anchor=\"middle\">" + detail::escape(plot.x_label, true) + "</text>\n";
  svg += "<text transform=\"translate(18," + num(TOP + (HEIGHT - TOP - BOTTOM) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + detail::escape(plot.y_label, true) + "</text>\n";
  // Series: whiskers, then line, then markers; legend on the right.
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const auto& s = plot.series[i];
    const std::string color = detail::series_color(i);
    auto pts = s.points;
    std::sort(pts.begin(), pts.end(), [](const WhiskerPoint& a, const WhiskerPoint& b) { return a.x < b.x; });
    std::string path;
    for (const auto& p : pts) {
      svg += "<line x1=\"" + num(fx(p.x)) + "\" x2=\"" + num(fx(p.x)) + "\" y1=\"" + num(fy(p.lo)) + "\" y2=\"" +
             num(fy(p.hi)) + "\" stroke=\"" + color + "\" stroke-opacity=\"0.6\"/>\n";
      path += (path.empty() ? "M" : " L") + num(fx(p.x)) + " " + num(fy(p.y));
    }
    if (s.lines && pts.size() > 1) {
      svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.5\"/>\n";
    }
    for (const auto& p : pts) {
      svg += "<circle cx=\"" + num(fx(p.x)) + "\" cy=\"" + num(fy(p.y)) + "\" r=\"" + (s.lines ? "2.5" : "2") +
             "\" fill=\"" + color + "\"/>\n";
    }
    const double ly = TOP + 14 + 18 * static_cast<double>(i);
    svg += "<rect x=\"" + num(WIDTH - RIGHT + 12) + "\" y=\"" + num(ly - 9) + "\" width=\"12\" height=\"12\" fill=\"" +
           color + "\"/>\n";
    svg += "<text x=\"" + num(WIDTH - RIGHT + 30) + "\" y=\"" + num(ly + 1) + "\">" + detail::escape(s.name, true) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace trainsim::svg
