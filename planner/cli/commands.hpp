#pragma once
// The subcommands, registered in one place; each lives in its own cmd_*.cpp.

#include <CLI/CLI.hpp>
#include <functional>

#include "cli_common.hpp"

namespace trainsim::cli {

struct Commands {
  std::function<int()> run = [] { return 0; };
};

void register_commands(CLI::App& app, Commands& commands);

// The end of every subcommand's --help, after its examples.
inline constexpr const char* EXIT_CODES_HELP =
    "Exit codes:\n"
    "  0  an answer, including \"does not fit\"\n"
    "  2  malformed input (the message names the flag or file and what was expected)\n"
    "  1  an internal error (or a file that could not be written)\n";
inline constexpr const char* OUTPUT_FILES_HELP =
    "Files given to -o (and --trace) are written whole or not at all: every path is checked first (an\n"
    "existing directory; the file absent or a regular one; no two outputs the same file), then each\n"
    "is written beside its target and renamed into place. Without -o the result goes to standard\n"
    "output.\n";

void register_memory(CLI::App& app, Commands& commands);
void register_list(CLI::App& app, Commands& commands);
void register_plan(CLI::App& app, Commands& commands);
void register_compare(CLI::App& app, Commands& commands);
void register_simulate(CLI::App& app, Commands& commands);
void register_validate(CLI::App& app, Commands& commands);
void register_capture(CLI::App& app, Commands& commands);

}  // namespace trainsim::cli
