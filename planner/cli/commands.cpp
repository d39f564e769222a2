#include "commands.hpp"

namespace trainsim::cli {

void register_commands(CLI::App& app, Commands& commands) {
  register_memory(app, commands);
  register_simulate(app, commands);
  register_plan(app, commands);
  register_compare(app, commands);
  register_list(app, commands);
  register_validate(app, commands);
  register_capture(app, commands);
}

}  // namespace trainsim::cli
