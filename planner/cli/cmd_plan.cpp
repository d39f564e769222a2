// `trainsim plan`: which configuration trains a model on N nodes (or on each of A..B), how long
// training takes, and what it costs.
#include <memory>
#include <string>

#include "commands.hpp"
#include "output.hpp"
#include "plan_answer.hpp"
#include "planner_flags.hpp"

namespace trainsim::cli {

void register_plan(CLI::App& app, Commands& commands) {
  struct State {
    planner::PlanFlags question;
    RunFlags run;
    OutputFlags output;
  };
  auto state = std::make_shared<State>();
  CLI::App* sub = app.add_subcommand("plan", "Search every legal strategy for the fastest (or cheapest) that fits, and rank them");
  add_question_flags(*sub, state->question, true);
  sub->add_option("--objective", state->question.objective, "Rank node counts by: time, cost or energy")
      ->group("Question")
      ->capture_default_str();
  sub->add_option("--top", state->question.top, "Configurations to rank per node count (default 5; 1 with a node range)")
      ->group("Question");
  sub->add_option("--gap", state->question.gap,
                  "Relative optimality gap: stop replaying a node count once nothing left could beat its K-th best by more "
                  "than this fraction (default 0: exact; 0.01 answers within 1%, much faster across a node range)")
      ->group("Question");
  sub->add_option("--families", state->question.families,
                  "Search only these strategy families, comma-separated (see `trainsim compare --help`)")
      ->group("Question");
  sub->add_flag("--explain", state->question.explain, "Add each entry's step breakdown and bound, and an example per dropped reason")
      ->group("Question");
  add_run_flags(*sub, state->run);
  add_output_flags(*sub, state->output, {"table", "json", "csv"});
  sub->footer(std::string("Examples:\n"
                          "  trainsim plan --model megatron-1t --hw dgx2 --nodes 1\n"
                          "  trainsim plan --model gpt3-175b --hw dgx-a100 --gpus 1024 --global-batch 1536 --tokens 300e9\n"
                          "  trainsim plan --model megatron-1t --hw dgx2 --nodes 1..128 --objective cost --format json -o plan.json\n"
                          "  mpirun -n 4 build/trainsim plan --model megatron-1t --hw dgx2 --nodes 1..128\n\n"
                          "Every legal strategy (tp x pp x dp = GPUs, virtual stages, sequence parallelism, ZeRO stage, offload\n"
                          "targets, recompute, schedule, micro-batch) is checked against the memory model; what fits is ordered\n"
                          "by a lower bound on its step time and replayed until no bound can beat the K-th best. Results are\n"
                          "cached (--cache): an interrupted plan resumes, a repeated one is instant.\n\n") +
              OUTPUT_FILES_HELP + "\n" + EXIT_CODES_HELP);
  sub->callback([state, sub, &commands] {
    commands.run = [state, sub] {
      planner::PlanQuestion q = planner::resolve_plan_question(state->question);
      std::vector<Output> outputs{result_output(*sub, state->output)};
      check_outputs(outputs);  // before the sweep, which may take a while
      SweepRuntime runtime(state->run);
      planner::SweepInputs in;
      in.options = runtime.options();
      in.walk_threads = runtime.jobs();
      in.walk_cache = &runtime.cache();
      in.stop_reason = [&runtime] { return runtime.stop_reason(); };
      const planner::PlanAnswer answer = planner::answer_plan(std::move(q), in, runtime.executor(), runtime.progress());
      runtime.progress().finish();
      if (!runtime.writes_output()) return 0;
      const std::string& format = state->output.format;
      outputs.front().text = format == "json"  ? planner::plan_json(answer).dump(2) + "\n"
                             : format == "csv" ? planner::plan_csv(answer)
                                               : planner::plan_table(answer);
      emit(std::move(outputs));
      runtime.report();
      return runtime.exit_status();
    };
  });
}

}  // namespace trainsim::cli
