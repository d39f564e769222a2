// `trainsim simulate`: replay one training step on the cluster model.
#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "output.hpp"
#include "simulate_answer.hpp"

namespace trainsim::cli {

void register_simulate(CLI::App& app, Commands& commands) {
  struct State {
    planner::InputFlags inputs;
    OutputFlags output;
    std::string trace;
    bool no_fold = false;
  };
  auto state = std::make_shared<State>();
  CLI::App* sub = app.add_subcommand("simulate", "Replay one training step: step time, throughput, busy time, memory");
  add_input_flags(*sub, state->inputs, ModelFlags::ARCHITECTURE_ONLY);
  add_output_flags(*sub, state->output, {"table", "json"});
  sub->add_flag("--no-fold", state->no_fold,
                "Simulate every rank and every micro-batch (no folding of identical ranks or micro-batches): slower, "
                "for checking a folded answer");
  sub->add_option("--trace", state->trace,
                  "Write a Chrome trace of the step (open it in https://ui.perfetto.dev); a configuration that does "
                  "not fit has none, and says so");
  sub->footer(std::string("Examples:\n"
                          "  trainsim simulate --model gpt2-1.5b --hw dgx2 --gpus 1 --micro-batch 1 --recompute full\n"
                          "  trainsim simulate --model megatron-1t --hw dgx2 --nodes 1 --zero 3 --offload-params nvme "
                          "--offload-optimizer nvme --recompute full --offload-activations cpu\n"
                          "  trainsim simulate --model gpt2-1.5b --hw dgx2 --zero 3 --offload-params cpu "
                          "--offload-optimizer cpu --recompute full --micro-batch 4 --format json -o step.json "
                          "--trace step-trace.json\n\n") +
              OUTPUT_FILES_HELP + "\n" + EXIT_CODES_HELP);
  sub->callback([state, sub, &commands] {
    commands.run = [state, sub] {
      planner::Request request = planner::resolve_request(state->inputs);
      std::vector<Output> outputs{result_output(*sub, state->output)};
      const bool trace = sub->count("--trace") > 0;
      if (trace) outputs.push_back({"--trace", state->trace, {}, false});
      // Before the simulation, which may take a while: a bad path fails at once.
      check_outputs(outputs);

      sim::SimOptions options;
      options.trace = trace;
      options.fold_ranks = !state->no_fold;
      options.fold_micro_batches = !state->no_fold;
      planner::SimulateAnswer answer = planner::answer_simulate(std::move(request), options);
      outputs.front().text = state->output.format == "json" ? planner::simulate_json(answer).dump(2) + "\n"
                                                            : planner::simulate_table(answer);
      std::string no_trace;
      if (trace) {
        if (answer.result.simulated) {
          outputs.back().text = std::move(answer.result.trace);
        } else {
          no_trace = planner::no_trace_reason(answer);
          outputs.pop_back();
        }
      }
      emit(std::move(outputs));
      if (!no_trace.empty()) {
        std::cerr << "trainsim: --trace: no trace written to \"" << state->trace << "\": " << no_trace << "\n";
      }
      return 0;
    };
  });
}

}  // namespace trainsim::cli
