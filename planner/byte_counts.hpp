#pragma once
// Byte counts in results. They are computed in floating point (a 10^18-parameter model holds
// 1.6e19 bytes of model states, beyond 2^63), and written as whole numbers where a double holds
// them exactly (below 2^53), as rounded floating-point numbers above.

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include <fmt/format.h>

namespace trainsim::planner {

inline nlohmann::ordered_json json_bytes(double bytes) {
  const double rounded = std::round(bytes);
  if (std::fabs(rounded) < 9007199254740992.0) return static_cast<std::int64_t>(rounded);
  return rounded;
}

// The same for CSV and tables: every digit of the rounded value, never a wrapped integer.
inline std::string bytes_text(double bytes) { return fmt::format("{:.0f}", std::round(bytes)); }

}  // namespace trainsim::planner
