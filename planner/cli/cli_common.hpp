#pragma once
// Pieces every trainsim subcommand shares: the input flags and the output flags (writing the
// results is output.hpp's).

#include <CLI/CLI.hpp>
#include <string>

#include "limits.hpp"
#include "request.hpp"

namespace trainsim::cli {

// Which model flags a command accepts: `simulate` needs an architecture, so it does not list
// --params (a raw parameter count), which it would only reject.
enum class ModelFlags { ANY, ARCHITECTURE_ONLY };
void add_input_flags(CLI::App& app, planner::InputFlags& flags, ModelFlags model_flags = ModelFlags::ANY);

// A whole-number flag within `limit`: "--micro-batch: expected a whole number >= 1, got 0".
CLI::Validator whole_number(const wl::IntLimit& limit);

struct OutputFlags {
  std::string format = "table";
  std::string output;  // empty: stdout
};
void add_output_flags(CLI::App& app, OutputFlags& out, std::initializer_list<std::string> formats);

}  // namespace trainsim::cli
