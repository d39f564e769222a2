#include "validation_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trainsim::planner {
namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

}  // namespace

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
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{:.0f}\" y=\"22\" font-size=\"14\">{}</text>\n",
      W, H, L, escape(title));
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
                     y(p.predicted), in ? "#2a7" : "#d33", escape(p.label));
  }
  s += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">measured</text>\n", (L + W - R) / 2, H - 18);
  s += fmt::format("<text x=\"16\" y=\"{:.0f}\" transform=\"rotate(-90 16 {:.0f})\" text-anchor=\"middle\">predicted</text>\n",
                   (T + H - B) / 2, (T + H - B) / 2);
  s += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" fill=\"#4a90d9\">band: within {:.0f}%</text>\n</svg>\n", L + 10, T + 16, band_pct);
  return s;
}

std::string error_bars_svg(const std::string& title, const std::vector<ErrorBar>& bars, double band_pct) {
  const double row = 14, L = 330, R = 30, T = 40, W = 760;
  const double H = T + row * static_cast<double>(bars.size()) + 30;
  double span = band_pct * 2;
  for (const auto& b : bars) span = std::max(span, std::abs(b.error_pct));
  span = std::ceil(span / 10) * 10;
  auto x = [&](double e) { return L + (e + span) / (2 * span) * (W - L - R); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" font-size=\"10\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"14\">{}</text>\n",
      W, H, escape(title));
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
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", L - 6, yy + 9, escape(b.label));
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x0, yy, std::max(1.0, x1 - x0),
                     row - 3, in ? "#2a7" : "#d33");
    yy += row;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace trainsim::planner
