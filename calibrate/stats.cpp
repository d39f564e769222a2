#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainsim::calibrate {
namespace {
// Percentile by linear interpolation between closest ranks (numpy's default "linear" method).
double percentile(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}
}  // namespace

Stats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  for (double v : samples) {
    if (!std::isfinite(v)) throw std::invalid_argument("summarize: non-finite sample");
  }
  std::sort(samples.begin(), samples.end());
  Stats s;
  s.n = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.median = percentile(samples, 0.5);
  s.q1 = percentile(samples, 0.25);
  s.q3 = percentile(samples, 0.75);
  return s;
}

std::vector<double> rates(double amount, const std::vector<double>& seconds) {
  std::vector<double> out;
  out.reserve(seconds.size());
  for (double t : seconds) {
    if (!(t > 0)) throw std::invalid_argument("rates: a sample took no time");
    out.push_back(amount / t);
  }
  return out;
}

nlohmann::ordered_json to_json(const Stats& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"q1", s.q1}, {"q3", s.q3}, {"n", s.n}};
}

}  // namespace trainsim::calibrate
