#pragma once
// Writing a command's results (atomically: a failed run leaves no partial file behind).

#include <string>

#include "cli_common.hpp"

namespace trainsim::cli {

// Writes to the --output file through a temporary and a rename, or to stdout.
void emit(const OutputFlags& out, const std::string& text);

}  // namespace trainsim::cli
