// `trainsim compare`: the best configuration of each strategy family (or strategy file) side by
// side, as a table (or JSON, CSV) and two SVG charts.
#include <memory>
#include <string>

#include "commands.hpp"
#include "compare_answer.hpp"
#include "config_error.hpp"
#include "output.hpp"
#include "planner_flags.hpp"

namespace trainsim::cli {
namespace {

std::vector<std::string> split_commas(const std::string& list, const std::string& flag) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (out.back().empty()) throw ConfigError(flag, flag, "a comma-separated list of strategy JSON files", "an empty entry");
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string family_help() {
  std::string text = "Strategy families (--families):\n";
  for (const auto& f : planner::families()) text += "  " + std::string(f.name) + std::string(20 - std::min<std::size_t>(f.name.size(), 19), ' ') + std::string(f.description) + "\n";
  return text;
}

}  // namespace

void register_compare(CLI::App& app, Commands& commands) {
  struct State {
    planner::PlanFlags question;
    RunFlags run;
    OutputFlags output;
    std::string strategies, charts;
  };
  auto state = std::make_shared<State>();
  CLI::App* sub = app.add_subcommand("compare", "The best configuration of each strategy family, side by side");
  add_question_flags(*sub, state->question, false);
  sub->add_option("--families", state->question.families,
                  std::string("Families to compare, comma-separated (default: ") + planner::DEFAULT_COMPARE_FAMILIES + ")")
      ->group("Question");
  sub->add_option("--strategies", state->strategies, "Strategy JSON files to compare instead, comma-separated")->group("Question");
  sub->add_option("--charts", state->charts,
                  "Write compare-step-time.svg and compare-memory.svg into this existing directory")
      ->group("Output");
  add_run_flags(*sub, state->run);
  add_output_flags(*sub, state->output, {"table", "json", "csv"});
  sub->footer(std::string("Examples:\n"
                          "  trainsim compare --model megatron-1t --hw dgx2 --nodes 64\n"
                          "  trainsim compare --model gpt-13b --hw dgx2 --nodes 1 --families dp,zero3,zero-offload --charts out\n"
                          "  trainsim compare --model gpt3-175b --hw dgx-a100 --nodes 128 --strategies a.json,b.json\n\n") +
              family_help() + "\n" + OUTPUT_FILES_HELP + "\n" + EXIT_CODES_HELP);
  sub->callback([state, sub, &commands] {
    commands.run = [state, sub] {
      planner::PlanFlags flags = state->question;
      if (!state->strategies.empty() && !flags.families.empty()) {
        throw ConfigError("--strategies", "--strategies", "either --families or --strategies, not both", "both");
      }
      if (state->strategies.empty() && flags.families.empty()) flags.families = planner::DEFAULT_COMPARE_FAMILIES;
      planner::PlanQuestion q = planner::resolve_plan_question(flags, 1);
      if (q.range()) throw ConfigError("--nodes", "--nodes", "one node count for compare (plan takes ranges)", flags.nodes);
      const std::vector<std::string> files =
          state->strategies.empty() ? std::vector<std::string>{} : split_commas(state->strategies, "--strategies");
      std::vector<Output> outputs{result_output(*sub, state->output)};
      if (!state->charts.empty()) {
        outputs.push_back({"--charts", state->charts + "/compare-step-time.svg", {}, false});
        outputs.push_back({"--charts", state->charts + "/compare-memory.svg", {}, false});
      }
      check_outputs(outputs);
      SweepRuntime runtime(state->run);
      planner::SweepInputs in;
      in.options = runtime.options();
      in.walk_threads = runtime.jobs();
      in.walk_cache = &runtime.cache();
      in.stop_reason = [&runtime] { return runtime.stop_reason(); };
      const planner::CompareAnswer answer = planner::answer_compare(std::move(q), files, in, runtime.executor(), runtime.progress());
      runtime.progress().finish();
      if (!runtime.writes_output()) return 0;
      const std::string& format = state->output.format;
      outputs[0].text = format == "json"  ? planner::compare_json(answer).dump(2) + "\n"
                        : format == "csv" ? planner::compare_csv(answer)
                                          : planner::compare_table(answer);
      if (!state->charts.empty()) {
        outputs[1].text = planner::compare_step_time_svg(answer);
        outputs[2].text = planner::compare_memory_svg(answer);
      }
      emit(std::move(outputs));
      runtime.report();
      return runtime.exit_status();
    };
  });
}

}  // namespace trainsim::cli
