#pragma once
// The physical range of every number a cluster profile holds. Nothing outside these ranges is a
// real machine, and everything inside them keeps the arithmetic downstream finite and exact
// enough (a 1e10 GiB GPU overflowed a 64-bit byte count; a 1e-300 GB/s link printed a
// 304-digit step time). hwprofiles/README.md prints the same table; a test keeps the two equal.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "strict_json.hpp"

namespace trainsim::hw {

struct QuantityRange {
  std::string_view key;  // key path in the profile, array indices dropped ("calibration.gemm.m")
  double min;
  double max;
  bool min_inclusive;
  bool integer;
  std::string_view unit;  // for messages and the README table
};

std::span<const QuantityRange> profile_quantity_ranges();
// "a number in (0, 16384] (GiB)": how errors and the README state a row.
std::string range_text(const QuantityRange& r);

// The range of `key_path` ("gpu.memory_GiB", "calibration.copies[2].points[0].GBps": indices are
// ignored). Throws std::logic_error for a key without a row: a loader bug, not an input error.
const QuantityRange& quantity_range(std::string_view key_path);

// Reads a number or an integer through its row of the table.
double ranged_number(StrictObject& o, std::string_view key);
std::int64_t ranged_integer(StrictObject& o, std::string_view key);
std::optional<double> optional_ranged_number(StrictObject& o, std::string_view key);

}  // namespace trainsim::hw
