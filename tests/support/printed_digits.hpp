#pragma once
// "Exact to the printed digit": a published table prints a value with d decimals; our value
// agrees when rounding it, or truncating it (as the ZeRO paper's Table 1 does for large
// figures, e.g. 4187.5 printed 4187), to d decimals gives the printed figure. Nothing looser.

#include <cmath>
#include <string>

namespace trainsim::test {

inline int printed_decimals(const std::string& printed) {
  const auto dot = printed.find('.');
  return dot == std::string::npos ? 0 : static_cast<int>(printed.size() - dot - 1);
}

inline bool agrees_to_printed_digit(double value, const std::string& printed) {
  const double scale = std::pow(10.0, printed_decimals(printed));
  const double target = std::round(std::stod(printed) * scale);
  const double scaled = value * scale;
  // A hair of slack for binary floating point on exact ties (1.875 -> 1.88).
  return std::round(scaled + 1e-9) == target || std::floor(scaled + 1e-9) == target;
}

// The same rule for significant digits ("1.5B" is 2 significant digits of 1.5e9).
inline bool agrees_to_significant_digits(double value, double printed, int digits) {
  const double magnitude = std::floor(std::log10(std::fabs(printed)));
  const double scale = std::pow(10.0, digits - 1 - magnitude);
  const double target = std::round(printed * scale);
  return std::round(value * scale) == target || std::floor(value * scale) == target;
}

}  // namespace trainsim::test
