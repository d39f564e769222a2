#pragma once
// The three ways trainsim-calibrate stops early, each with its own exit code so scripts can tell
// a typo from a broken machine: UsageError -> 2, NoGpuError -> 3, CalibrationError -> 1.

#include <stdexcept>
#include <string>

namespace trainsim::calibrate {

inline constexpr int EXIT_FAILED = 1;
inline constexpr int EXIT_USAGE = 2;
inline constexpr int EXIT_NO_GPU = 3;

// A measurement could not be taken or its output failed the check (a CUDA error, a wrong
// kernel result, an I/O error): the run stops and writes nothing.
class CalibrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The profile made from the measurements fails the strict loader (a figure out of its range). A
// run's own measurements: a failure (exit 1); `rebuild`'s input file: bad input (exit 2).
class UnloadableProfileError : public CalibrationError {
 public:
  using CalibrationError::CalibrationError;
};

// Bad command-line input. The message names the flag and what was expected.
class UsageError : public std::runtime_error {
 public:
  UsageError(const std::string& flag, const std::string& expected, const std::string& got = {})
      : std::runtime_error(flag + ": expected " + expected + (got.empty() ? "" : ", got " + got)) {}
};

// GPU benchmarks were asked for but this build or this machine has no usable GPU.
class NoGpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainsim::calibrate
