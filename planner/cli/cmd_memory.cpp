// `trainsim memory`: per-GPU and per-node memory, where each byte lives, and whether it fits.
#include <memory>

#include "commands.hpp"
#include "output.hpp"
#include "memory_answer.hpp"

namespace trainsim::cli {

void register_memory(CLI::App& app, Commands& commands) {
  struct State {
    planner::InputFlags inputs;
    OutputFlags output;
  };
  auto state = std::make_shared<State>();
  CLI::App* sub = app.add_subcommand("memory", "Memory per GPU and per node, where it lives, and whether it fits");
  add_input_flags(*sub, state->inputs);
  add_output_flags(*sub, state->output, {"table", "json", "csv"});
  sub->callback([state, &commands] {
    commands.run = [state] {
      const planner::MemoryAnswer answer = planner::answer_memory(planner::resolve_request(state->inputs));
      std::string text;
      if (state->output.format == "json") text = planner::memory_json(answer).dump(2) + "\n";
      else if (state->output.format == "csv") text = planner::memory_csv(answer);
      else text = planner::memory_table(answer);
      emit(state->output, text);
      return 0;
    };
  });
}

}  // namespace trainsim::cli
