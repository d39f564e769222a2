// `trainsim simulate`: replay one training step on the cluster model.
#include <memory>

#include "commands.hpp"
#include "output.hpp"
#include "simulate_answer.hpp"

namespace trainsim::cli {

void register_simulate(CLI::App& app, Commands& commands) {
  struct State {
    planner::InputFlags inputs;
    OutputFlags output;
    std::string trace;
  };
  auto state = std::make_shared<State>();
  CLI::App* sub = app.add_subcommand("simulate", "Replay one training step: step time, throughput, busy time, memory");
  add_input_flags(*sub, state->inputs);
  add_output_flags(*sub, state->output, {"table", "json"});
  sub->add_option("--trace", state->trace, "Write a Chrome trace (open it in https://ui.perfetto.dev)");
  sub->callback([state, &commands] {
    commands.run = [state] {
      sim::SimOptions options;
      options.trace_path = state->trace;
      const planner::SimulateAnswer answer =
          planner::answer_simulate(planner::resolve_request(state->inputs), options);
      const std::string text = state->output.format == "json" ? planner::simulate_json(answer).dump(2) + "\n"
                                                              : planner::simulate_table(answer);
      emit(state->output, text);
      return 0;
    };
  });
}

}  // namespace trainsim::cli
