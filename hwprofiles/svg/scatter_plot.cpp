// Predicted against measured on log axes, with the diagonal and the tolerance band.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "svg_parts.hpp"
#include "svg_plot.hpp"

namespace trainsim::svg {

std::string scatter_svg(const std::string& title, const std::vector<ScatterPoint>& points, double band_pct) {
  const double W = 640, H = 520, L = 70, R = 20, T = 40, B = 60;
  double lo = 1e300, hi = 0;
  for (const auto& p : points) {
    for (double v : {p.measured, p.predicted}) {
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (hi <= 0) lo = 0.1, hi = 1;
  const double a = std::floor(std::log10(lo)), b = std::ceil(std::log10(hi) + 1e-9);
  auto x = [&](double v) { return L + (std::log10(v) - a) / (b - a) * (W - L - R); };
  auto y = [&](double v) { return H - B - (std::log10(v) - a) / (b - a) * (H - T - B); };
  std::string s = detail::open_svg(fmt::format("{:.0f}", W), fmt::format("{:.0f}", H), 12);
  s += fmt::format("<text x=\"{:.0f}\" y=\"22\" font-size=\"14\">{}</text>\n", L, detail::escape(title));
  for (double e = a; e <= b; e += 1) {
    const double v = std::pow(10.0, e);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", x(v), T, x(v), H - B);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", L, y(v), W - R, y(v));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n", x(v), H - B + 16, v);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", L - 6, y(v) + 4, v);
  }
  const double lo_v = std::pow(10.0, a), hi_v = std::pow(10.0, b), f = band_pct / 100.0;
  s += fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"#4a90d9\" fill-opacity=\"0.12\"/>\n",
                   x(lo_v), y(lo_v * (1 + f)), x(hi_v / (1 + f)), y(hi_v), x(hi_v), y(hi_v * (1 - f)), x(lo_v), y(lo_v * (1 - f)));
  s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#4a90d9\"/>\n", x(lo_v), y(lo_v), x(hi_v), y(hi_v));
  for (const auto& p : points) {
    if (p.measured <= 0 || p.predicted <= 0) continue;
    const bool in = std::abs(p.predicted - p.measured) <= f * p.measured;
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}</title></circle>\n", x(p.measured),
                     y(p.predicted), in ? "#2a7" : "#d33", detail::escape(p.label));
  }
  s += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">measured</text>\n", (L + W - R) / 2, H - 18);
  s += fmt::format("<text x=\"16\" y=\"{:.0f}\" transform=\"rotate(-90 16 {:.0f})\" text-anchor=\"middle\">predicted</text>\n",
                   (T + H - B) / 2, (T + H - B) / 2);
  s += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" fill=\"#4a90d9\">band: within {:.0f}%</text>\n</svg>\n", L + 10, T + 16, band_pct);
  return s;
}

}  // namespace trainsim::svg
