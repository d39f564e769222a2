#include "svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainsim::reports {
namespace {

constexpr double W = 640, H = 400, LEFT = 70, RIGHT = 170, TOP = 40, BOTTOM = 50;
constexpr const char* COLORS[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string line_plot_svg(const PlotSpec& spec, const std::vector<Series>& series) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  auto tx = [&](double v) { return spec.log_x ? std::log10(v) : v; };
  auto ty = [&](double v) { return spec.log_y ? std::log10(v) : v; };
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, tx(s.x[i]));
      x1 = std::max(x1, tx(s.x[i]));
      y0 = std::min(y0, ty(s.y[i]));
      y1 = std::max(y1, ty(s.y[i]));
    }
  }
  if (!spec.log_y) y0 = std::min(y0, 0.0);
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  const double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
  auto px = [&](double v) { return LEFT + (tx(v) - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) { return TOP + ph - (ty(v) - y0) / (y1 - y0) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
      W, H, LEFT, escape(spec.title));
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", LEFT, TOP + ph, LEFT + pw, TOP + ph);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", LEFT, TOP, LEFT, TOP + ph);
  for (int i = 0; i <= 4; ++i) {
    const double fx = x0 + (x1 - x0) * i / 4, fy = y0 + (y1 - y0) * i / 4;
    const double vx = spec.log_x ? std::pow(10, fx) : fx, vy = spec.log_y ? std::pow(10, fy) : fy;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.3g}</text>\n", px(vx), TOP + ph + 18, vx);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:.3g}</text>\n", LEFT - 6, py(vy) + 4, vy);
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", LEFT, py(vy), LEFT + pw, py(vy));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", LEFT + pw / 2, H - 10, escape(spec.x_label));
  svg += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>\n", TOP + ph / 2,
                     TOP + ph / 2, escape(spec.y_label));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* color = COLORS[k % (sizeof COLORS / sizeof *COLORS)];
    std::string points;
    for (std::size_t i = 0; i < s.x.size(); ++i) points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, points);
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(s.x[i]), py(s.y[i]), color);
    }
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{}\"/>\n", LEFT + pw + 12, TOP + 10 + 18 * k, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", LEFT + pw + 28, TOP + 15 + 18 * k, escape(s.label));
  }
  svg += "</svg>\n";
  return svg;
}

std::string bar_chart_svg(const BarChart& c) {
  const std::size_t rows = c.categories.size(), n = c.series.size();
  const double label_w = 150, legend_w = 190, row_h = c.stacked ? 26 : 10.0 * static_cast<double>(std::max<std::size_t>(n, 1)) + 10;
  const double pw = W - label_w - legend_w, ph = row_h * static_cast<double>(rows), height = TOP + ph + BOTTOM;
  auto value = [&](std::size_t k, std::size_t r) { return r < c.series[k].y.size() ? c.series[k].y[r] : std::nan(""); };
  auto present = [](double v) { return std::isfinite(v) && v > 0; };
  double hi = 0, lo = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const double v = value(k, r);
      if (!present(v)) continue;
      sum += v;
      hi = std::max(hi, c.stacked ? sum : v);
      lo = std::min(lo, v);
    }
  }
  if (hi <= 0) hi = 1;
  const bool log = c.log_scale && !c.stacked && std::isfinite(lo);
  const double a = log ? std::floor(std::log10(lo)) : 0.0, b = log ? std::max(a + 1, std::ceil(std::log10(hi))) : hi;
  auto px = [&](double v) { return label_w + (log ? (std::log10(v) - a) / (b - a) : v / b) * pw; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
      W, height, escape(c.title));
  for (int i = 0; i <= 4; ++i) {
    const double v = log ? std::pow(10, a + (b - a) * i / 4) : b * i / 4;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n", px(v), TOP, px(v), TOP + ph);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n", px(v), TOP + ph + 16, v);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", label_w + pw / 2, height - 12, escape(c.value_label));
  for (std::size_t r = 0; r < rows; ++r) {
    const double y = TOP + row_h * static_cast<double>(r);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", label_w - 8, y + row_h / 2 + 4,
                       escape(c.categories[r]));
    double x = label_w;
    bool any = false;
    for (std::size_t k = 0; k < n; ++k) {
      const double v = value(k, r);
      if (!present(v)) continue;
      any = true;
      const char* color = COLORS[k % (sizeof COLORS / sizeof *COLORS)];
      if (c.stacked) {
        const double w = v / b * pw;
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x, y + 4, w, row_h - 8, color);
        x += w;
      } else {
        const double w = px(v) - label_w;
        svg += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"8\" fill=\"{}\"/>\n", label_w,
                           y + 5 + 10.0 * static_cast<double>(k), std::max(w, 1.0), color);
      }
    }
    if (!any && r < c.notes.size()) {
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#666\">{}</text>\n", label_w + 6, y + row_h / 2 + 4, escape(c.notes[r]));
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    const char* color = COLORS[k % (sizeof COLORS / sizeof *COLORS)];
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", W - legend_w + 14, TOP + 18 * k, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", W - legend_w + 32, TOP + 10 + 18 * k, escape(c.series[k].label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace trainsim::reports
