// Lines through points on linear or log axes, as the simulator's cost curve draws them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "svg_parts.hpp"
#include "svg_plot.hpp"

namespace trainsim::svg {
namespace {

constexpr double W = 640, H = 400, LEFT = 70, RIGHT = 170, TOP = 40, BOTTOM = 50;

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
  std::string svg = detail::open_svg(fmt::format("{}", W), fmt::format("{}", H), 12);
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", LEFT, detail::escape(spec.title));
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", LEFT, TOP + ph, LEFT + pw, TOP + ph);
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", LEFT, TOP, LEFT, TOP + ph);
  for (int i = 0; i <= 4; ++i) {
    const double fx = x0 + (x1 - x0) * i / 4, fy = y0 + (y1 - y0) * i / 4;
    const double vx = spec.log_x ? std::pow(10, fx) : fx, vy = spec.log_y ? std::pow(10, fy) : fy;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.3g}</text>\n", px(vx), TOP + ph + 18, vx);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:.3g}</text>\n", LEFT - 6, py(vy) + 4, vy);
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", LEFT, py(vy), LEFT + pw, py(vy));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", LEFT + pw / 2, H - 10, detail::escape(spec.x_label));
  svg += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>\n", TOP + ph / 2,
                     TOP + ph / 2, detail::escape(spec.y_label));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* color = detail::series_color(k, 6);
    std::string points;
    for (std::size_t i = 0; i < s.x.size(); ++i) points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, points);
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(s.x[i]), py(s.y[i]), color);
    }
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{}\"/>\n", LEFT + pw + 12, TOP + 10 + 18 * k, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", LEFT + pw + 28, TOP + 15 + 18 * k, detail::escape(s.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace trainsim::svg
