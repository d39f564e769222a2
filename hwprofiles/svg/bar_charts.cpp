// Horizontal bars: trainsim compare's stacked and grouped charts, and trainsim validate's signed
// errors.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "svg_parts.hpp"
#include "svg_plot.hpp"

namespace trainsim::svg {

std::string bar_chart_svg(const BarChart& c) {
  constexpr double W = 640, TOP = 40, BOTTOM = 50;  // the line plots' width and margins
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
  std::string svg = detail::open_svg(fmt::format("{}", W), fmt::format("{}", height), 12);
  svg += fmt::format("<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", detail::escape(c.title));
  for (int i = 0; i <= 4; ++i) {
    const double v = log ? std::pow(10, a + (b - a) * i / 4) : b * i / 4;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n", px(v), TOP, px(v), TOP + ph);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n", px(v), TOP + ph + 16, v);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", label_w + pw / 2, height - 12, detail::escape(c.value_label));
  for (std::size_t r = 0; r < rows; ++r) {
    const double y = TOP + row_h * static_cast<double>(r);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", label_w - 8, y + row_h / 2 + 4,
                       detail::escape(c.categories[r]));
    double x = label_w;
    bool any = false;
    for (std::size_t k = 0; k < n; ++k) {
      const double v = value(k, r);
      if (!present(v)) continue;
      any = true;
      const char* color = detail::series_color(k, 6);
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
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#666\">{}</text>\n", label_w + 6, y + row_h / 2 + 4, detail::escape(c.notes[r]));
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    const char* color = detail::series_color(k, 6);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", W - legend_w + 14, TOP + 18 * k, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", W - legend_w + 32, TOP + 10 + 18 * k, detail::escape(c.series[k].label));
  }
  svg += "</svg>\n";
  return svg;
}


std::string error_bars_svg(const std::string& title, const std::vector<ErrorBar>& bars, double band_pct) {
  const double row = 14, L = 330, R = 30, T = 40, W = 760;
  const double H = T + row * static_cast<double>(bars.size()) + 30;
  double span = band_pct * 2;
  for (const auto& b : bars) span = std::max(span, std::abs(b.error_pct));
  span = std::ceil(span / 10) * 10;
  auto x = [&](double e) { return L + (e + span) / (2 * span) * (W - L - R); };
  std::string s = detail::open_svg(fmt::format("{:.0f}", W), fmt::format("{:.0f}", H), 10);
  s += fmt::format("<text x=\"10\" y=\"22\" font-size=\"14\">{}</text>\n", detail::escape(title));
  s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#4a90d9\" fill-opacity=\"0.12\"/>\n", x(-band_pct),
                   T - 4, x(band_pct) - x(-band_pct), row * static_cast<double>(bars.size()) + 4);
  for (double e = -span; e <= span + 1e-9; e += span / 4) {
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", x(e), T - 4, x(e), H - 26);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:+.0f}%</text>\n", x(e), H - 12, e);
  }
  double yy = T;
  for (const auto& b : bars) {
    const double x0 = x(std::min(0.0, b.error_pct)), x1 = x(std::max(0.0, b.error_pct));
    const bool in = std::abs(b.error_pct) <= band_pct;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", L - 6, yy + 9, detail::escape(b.label));
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x0, yy, std::max(1.0, x1 - x0),
                     row - 3, in ? "#2a7" : "#d33");
    yy += row;
  }
  s += "</svg>\n";
  return s;
}
}  // namespace trainsim::svg
