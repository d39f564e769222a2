#pragma once
// One calibration run from parsed options to files on disk, and the `compare` command.

#include "options.hpp"

namespace trainsim::calibrate {

inline constexpr const char* TOOL_VERSION = "0.1.0";

// Returns the exit code; throws UsageError / NoGpuError / CalibrationError (see errors.hpp).
int run_calibration(const Options& options);
int run_compare(const ParsedCommand& command);

}  // namespace trainsim::calibrate
