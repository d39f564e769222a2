// `trainsim memory`: per-GPU and per-node memory, where each byte lives, and whether it fits.
#include <memory>
#include <string>

#include "commands.hpp"
#include "memory_answer.hpp"
#include "output.hpp"

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
  sub->footer(std::string("Examples:\n"
                          "  trainsim memory --model megatron-1t --hw dgx2 --nodes 1 --zero 3 --offload-params nvme "
                          "--offload-optimizer nvme --recompute full --offload-activations cpu\n"
                          "  trainsim memory --model gpt3-175b --hw dgx-a100 --nodes 8 --tp 8 --pp 8 --format json -o memory.json\n"
                          "  trainsim memory --params 7.5e9 --gpus 8 --zero 2 --format csv\n\n") +
              OUTPUT_FILES_HELP + "\n" + EXIT_CODES_HELP);
  sub->callback([state, sub, &commands] {
    commands.run = [state, sub] {
      planner::Request request = planner::resolve_request(state->inputs);
      std::vector<Output> outputs{result_output(*sub, state->output)};
      check_outputs(outputs);
      const planner::MemoryAnswer answer = planner::answer_memory(std::move(request));
      std::string& text = outputs.front().text;
      if (state->output.format == "json") text = planner::memory_json(answer).dump(2) + "\n";
      else if (state->output.format == "csv") text = planner::memory_csv(answer);
      else text = planner::memory_table(answer);
      emit(std::move(outputs));
      return 0;
    };
  });
}

}  // namespace trainsim::cli
