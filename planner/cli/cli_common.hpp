#pragma once
// Pieces every trainsim subcommand shares: the input flags and the output flags (writing the
// results is output.hpp's).

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

}  // namespace trainsim::cli
