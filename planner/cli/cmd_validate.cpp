// `trainsim validate`: simulate exactly what a measured run ran and compare (issue 10).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>

#include "allocator_record.hpp"
#include "commands.hpp"
#include "config_error.hpp"
#include "output.hpp"
#include "validation.hpp"

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;

const char* const REPORT_FILES[] = {"report.md", "summary.json"};

}  // namespace

void register_validate(CLI::App& app, Commands& commands) {
  struct State {
    planner::InputFlags inputs;
    OutputFlags output;
    std::string measured, sidecar, known_gaps, report_dir, allocator_record, summarize_trace;
    bool no_trace = false;
  };
  auto state = std::make_shared<State>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Predicted against measured: simulate what a measured training step ran and compare step time, "
                  "peak memory, bubble and exposed communication");
  sub->add_option("--measured", state->measured,
                  "A measured-run JSON (reports/validation/README.md documents the schema; the reference step writes "
                  "it too), a torch.profiler Chrome trace (.json or .json.gz; model and strategy from --sidecar or the "
                  "flags), or a directory: every measured-run JSON under it");
  sub->add_option("--allocator-record", state->allocator_record,
                  "Instead of --measured: the CUDA caching allocator's own record of a run (NAME.allocator.rankR.json.gz, "
                  "written by `run_step.py --allocator-trace`; reports/validation/allocator/README.md), or a directory of "
                  "them: replays its requests through trainsim's allocator model and compares the reserved peak");
  sub->add_option("--summarize-trace", state->summarize_trace,
                  "Instead of --measured: a torch.profiler Chrome trace (.json or .json.gz) to read and write as its "
                  "summary (kind \"trainsim.trace_summary\", JSON), all that validate reads of a trace; a measured run "
                  "names such a file as measured.trace_summary instead of its trace");
  sub->add_option("--sidecar", state->sidecar,
                  "With a profiler trace: a JSON naming what the trace ran ({\"schema_version\": 1, \"kind\": "
                  "\"trainsim.trace_sidecar\", \"name\", \"model\", \"strategy\", \"stack\", optional \"gpu\", "
                  "\"peak_allocated_bytes\", \"peak_reserved_bytes\"})");
  sub->add_option("--known-gaps", state->known_gaps,
                  "Rows known to miss their target, each with its reason (reports/validation/known_gaps.json)");
  sub->add_option("--report-dir", state->report_dir,
                  "Write report.md, summary.json and the SVG charts into this existing directory (all or none)");
  sub->add_flag("--no-trace", state->no_trace,
                "Do not read the measured runs' profiler traces (no exposed-communication or bubble rows from them)");
  add_input_flags(*sub, state->inputs, ModelFlags::ARCHITECTURE_ONLY);
  // Not dgx2: without --hw each run is simulated on the calibrated profile of its own GPU.
  sub->get_option("--hw")
      ->default_str("")
      ->description("Cluster: a built-in profile name or a profile JSON (default: the profile the run names, else the "
                    "calibrated built-in profile of the run's GPU)");
  add_output_flags(*sub, state->output, {"table", "json"});
  sub->footer(std::string("Without --hw, a run that names a profile (\"profile\": the calibration of its own host, a file "
                          "beside it) is costed there, any other on the calibrated built-in profile of its GPU (h200x4-measured "
                          "for the committed H200 runs).\n\n"
                          "Examples:\n"
                          "  trainsim validate --measured reports/validation/measured/h200x1/h200x1_single_L28-h4096_mb1x2.json\n"
                          "  trainsim validate --measured trace.json.gz --sidecar run.json --hw h200x4-measured\n"
                          "  trainsim validate --measured reports/validation/measured --known-gaps "
                          "reports/validation/known_gaps.json --report-dir reports/validation\n"
                          "  trainsim validate --allocator-record reports/validation/allocator\n"
                          "  trainsim validate --summarize-trace run.trace.json.gz -o run.trace_summary.json\n\n") +
              OUTPUT_FILES_HELP + "\n" + EXIT_CODES_HELP);
  sub->callback([state, sub, &commands] {
    commands.run = [state, sub] {
      const bool hw_given = sub->count("--hw") > 0;
      std::vector<Output> outputs{result_output(*sub, state->output)};
      const int modes = !state->measured.empty() + !state->allocator_record.empty() + !state->summarize_trace.empty();
      if (modes != 1) {
        throw ConfigError("--measured", "--measured", "exactly one of --measured, --allocator-record and --summarize-trace",
                          modes == 0 ? "none" : "several");
      }
      if (!state->summarize_trace.empty()) {
        // The summary is the trace's alone: any other input flag would change nothing, so it is refused.
        for (const CLI::Option* o : sub->get_options()) {
          const std::string name = o->get_name();
          if (o->count() == 0 || name == "--summarize-trace" || name == "--output") continue;
          throw ConfigError(name, name, "only -o besides --summarize-trace (the summary is JSON)", name);
        }
        check_outputs(outputs);
        const planner::TraceSummary t = planner::read_profiler_trace(state->summarize_trace);
        outputs.front().text =
            planner::trace_summary_json(t, fs::path(state->summarize_trace).filename().string()).dump(1) + "\n";
        emit(std::move(outputs));
        return 0;
      }
      if (!state->allocator_record.empty()) {
        // A record says what ran; the model, strategy and cluster flags would change nothing, so they
        // are refused rather than ignored.
        for (const CLI::Option* o : sub->get_options()) {
          const std::string name = o->get_name();
          if (o->count() == 0 || name == "--allocator-record" || name == "--format" || name == "--output") continue;
          throw ConfigError(name, name, "only --format and -o besides --allocator-record", name);
        }
        check_outputs(outputs);
        // Every record is read and checked before anything is written.
        std::vector<planner::AllocatorReplay> replays;
        for (const auto& file : planner::allocator_record_files(state->allocator_record)) {
          replays.push_back(planner::replay_allocator_record(planner::load_allocator_record(file)));
        }
        outputs.front().text = state->output.format == "json" ? planner::allocator_replay_json(replays).dump(2) + "\n"
                                                              : planner::allocator_replay_table(replays);
        emit(std::move(outputs));
        return 0;
      }
      if (!state->report_dir.empty()) {
        std::error_code ec;
        if (!fs::is_directory(state->report_dir, ec)) {
          throw ConfigError("--report-dir", "--report-dir", "an existing directory", "\"" + state->report_dir + "\"");
        }
        for (const char* f : REPORT_FILES) outputs.push_back({"--report-dir", (fs::path(state->report_dir) / f).string(), {}, false});
        for (const char* f : planner::CHART_FILES) {
          outputs.push_back({"--report-dir", (fs::path(state->report_dir) / f).string(), {}, false});
        }
      }
      check_outputs(outputs);

      // Everything is read and checked before anything is simulated or written.
      const planner::ValidationInputs in = planner::read_validation_inputs(state->measured, state->sidecar, state->inputs);
      const std::vector<planner::KnownGap> gaps =
          state->known_gaps.empty() ? std::vector<planner::KnownGap>{} : planner::load_known_gaps(state->known_gaps);
      std::vector<planner::RunValidation> runs;
      for (const auto& run : in.runs) runs.push_back(planner::validate_run(run, state->inputs, hw_given, !state->no_trace));
      planner::apply_known_gaps(runs, gaps);
      planner::check_known_gaps(runs, gaps, state->known_gaps);

      outputs.front().text = state->output.format == "json"
                                 ? planner::summary_json(runs, in.paths, state->known_gaps).dump(2) + "\n"
                                 : planner::validation_table(runs);
      if (!state->report_dir.empty()) {
        std::string command = "build/trainsim validate --measured " + state->measured;
        if (!state->sidecar.empty()) command += " --sidecar " + state->sidecar;
        if (!state->known_gaps.empty()) command += " --known-gaps " + state->known_gaps;
        command += " --report-dir DIR";  // the report's own folder: the same bytes wherever it is written
        if (state->no_trace) command += " --no-trace";
        outputs[1].text = planner::validation_markdown(runs, in.paths, state->known_gaps, command);
        outputs[2].text = planner::summary_json(runs, in.paths, state->known_gaps).dump(2) + "\n";
        const auto charts = planner::validation_charts(runs);
        for (std::size_t i = 0; i < charts.size(); ++i) outputs[3 + i].text = charts[i].second;
      }
      emit(std::move(outputs));
      return 0;
    };
  });
}

}  // namespace trainsim::cli
