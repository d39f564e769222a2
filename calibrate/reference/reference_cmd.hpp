#pragma once
// `trainsim-calibrate reference ...`: parses, runs on the GPU, writes the measured run (or the
// check report) into --out. Returns the exit code; throws UsageError / NoGpuError /
// CalibrationError like the rest of the tool.

#include <string>
#include <vector>

namespace trainsim::calibrate::ref {

int run_reference_command(const std::vector<std::string>& args);  // args after "reference"

}  // namespace trainsim::calibrate::ref
