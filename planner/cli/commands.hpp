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

void register_memory(CLI::App& app, Commands& commands);
void register_list(CLI::App& app, Commands& commands);
void register_simulate(CLI::App& app, Commands& commands);

}  // namespace trainsim::cli
