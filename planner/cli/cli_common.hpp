#pragma once
// Pieces every trainsim subcommand shares: the input flags, output formats and the writing of
// results (atomically: a failed run leaves no partial file behind).

#include <CLI/CLI.hpp>
#include <string>

#include "request.hpp"

namespace trainsim::cli {

void add_input_flags(CLI::App& app, planner::InputFlags& flags);

struct OutputFlags {
  std::string format = "table";
  std::string output;  // empty: stdout
};
void add_output_flags(CLI::App& app, OutputFlags& out, std::initializer_list<std::string> formats);

// Writes to the --output file through a temporary and a rename, or to stdout.
void emit(const OutputFlags& out, const std::string& text);

}  // namespace trainsim::cli
