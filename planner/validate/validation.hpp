#pragma once
// Predicted against measured (issue 10): simulate exactly the configuration a measured run ran
// (its model, strategy and stack) on a calibrated profile, and compare step time, peak memory
// per GPU (allocated and reserved), exposed communication and the pipeline bubble, each with its
// signed error. Rows outside the tolerances stay, with their reason, when a committed list of
// known gaps names them.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "measured_run.hpp"
#include "profiler_trace.hpp"
#include "request.hpp"

namespace trainsim::planner {

// The targets of issue 10: every row within 10% on step time and peak memory, the mean absolute
// error of each within 5%, the bubble within 0.03.
inline constexpr double STEP_TOLERANCE_PCT = 10.0;
inline constexpr double MEMORY_TOLERANCE_PCT = 10.0;
inline constexpr double MEAN_TOLERANCE_PCT = 5.0;
inline constexpr double BUBBLE_TOLERANCE = 0.03;

struct ValidationRow {
  std::string name;    // the measured run
  // step_time, peak_allocated, peak_reserved, exposed_communication, bubble_fraction, compute_busy,
  // optimizer_busy, fits (runs whose measured.oom is given: 1 where the configuration fits its GPU, 0
  // where it runs out of memory)
  std::string metric;
  std::string unit;    // "s", "bytes", "fraction", "boolean"
  double predicted = 0;
  double measured = 0;
  double error_pct = 0;  // 100 (predicted - measured) / measured
  double error_abs = 0;  // predicted - measured
  bool toleranced = false;  // a metric with a target (step_time, peak_allocated, bubble_fraction)
  bool within = true;       // inside its target (always true when not toleranced)
  std::string note;         // how it was measured or predicted, when it matters
  std::string gap;          // the known gap's reason, when the committed list names this row
};

struct RunValidation {
  MeasuredRun run;
  std::string profile;                   // the profile simulated on
  std::string profile_description;       // its description (who calibrated it, where, when)
  std::vector<std::string> features;     // what its configuration exercises (accuracy.hpp, strategy_features)
  std::vector<double> predicted_peaks;   // per simulated GPU (pipeline stage)
  // per simulated GPU, what the caching-allocator model reserves; empty for a stack without it
  std::vector<double> predicted_reserved;
  std::optional<TraceSummary> trace;
  std::vector<ValidationRow> rows;
  std::vector<std::string> notes;        // the simulation's assumptions and notes, once each
  std::string storage_basis;             // when the run's machine_storage replaced the profile's: what and whence
  std::string error;                     // when nothing could be predicted: why
  std::string capture;                   // the capture the run was predicted from (its id), if any
  // How host-bound the prediction is: the relative change of the predicted step per relative
  // change of the profile's host dispatch figures for the run's stack, from a second replay with them
  // HOST_SENSITIVITY_PROBE larger (0: the host never on the step's critical path; 1: the step
  // moves as the host does). Only where the profile has host dispatch figures for the run's stack.
  std::optional<double> host_sensitivity;
  // FSDP2's accumulating gradient copies are replayed into resident heap pages, as the calibration
  // measured them; where glibc's per-thread arena gives such a copy a heap of its own every page
  // faults in instead (workloads/stacks/training_stacks.md, "FSDP2"). The predicted step of a second
  // replay costed so (with_fresh_pageable_pages), for runs that make such copies.
  std::optional<double> fresh_pages_step_s;
  // GPU kernel time of one step by class (GEMM, attention, other kernels, optimizer): the replay's
  // first simulated GPU against rank 0's profiler trace, each kernel's duration summed; empty
  // without a trace of a measured run.
  struct KernelClass {
    std::string name;
    double predicted_s = 0, measured_s = 0;
  };
  std::vector<KernelClass> kernel_classes;
};

// The run's row of `metric` ("step_time", "bubble_fraction", ...), or none.
inline const ValidationRow* find_row(const RunValidation& v, const std::string& metric) {
  for (const ValidationRow& r : v.rows) {
    if (r.metric == metric) return &r;
  }
  return nullptr;
}

// The metric of the one row a run that could not be predicted has in the report: "fits" where it
// ran out of memory (it has no step time), else "step_time".
inline const char* error_metric(const MeasuredRun& r) { return ran_out_of_memory(r) ? "fits" : "step_time"; }

// The relative growth of the host dispatch figures in the replay that measures host_sensitivity.
inline constexpr double HOST_SENSITIVITY_PROBE = 0.1;

struct KnownGap {
  std::string name, metric, reason;
};
// reports/validation/known_gaps.json: {"schema_version": 1, "gaps": [{"name", "metric", "reason"}]}.
std::vector<KnownGap> load_known_gaps(const std::string& path);

// The built-in profile for a run's GPUs when --hw is not given: the profiles calibrated for PyTorch's
// stacks (host dispatch, flash attention and the torch_* kernel curves) whose GPU is the run's and
// whose node holds its GPUs (first by name); throws ConfigError naming the run when there is none.
std::string default_profile(const MeasuredRun& run);

// What `--measured` named: one measured-run JSON, one profiler trace (with `sidecar` or the flags
// saying what it ran), or a directory (every measured-run JSON under it, in path order; other JSON
// files there, such as the runs' model files, are skipped). `paths` as given, for provenance.
struct ValidationInputs {
  std::vector<MeasuredRun> runs;
  std::vector<std::string> paths;
};
ValidationInputs read_validation_inputs(const std::string& measured, const std::string& sidecar, const InputFlags& flags);

// A run's own capture ("capture") together with --capture is a ConfigError naming both: which one
// predicts the run would be left unsaid.
void check_capture_source(const MeasuredRun& run, const InputFlags& flags);

// Simulates the run's model and strategy (flags override them; --hw when `hw_given`, else
// default_profile; the run's own capture, else --capture) and compares. A run whose measured.oom is
// given gets a "fits" row (validation.cpp, fits_row); one that ran out of memory has only that row.
RunValidation validate_run(const MeasuredRun& run, const InputFlags& flags, bool hw_given, bool read_trace);
void apply_known_gaps(std::vector<RunValidation>& runs, const std::vector<KnownGap>& gaps);
// A gap naming a row that the runs do not have is a ConfigError naming the file.
void check_known_gaps(const std::vector<RunValidation>& runs, const std::vector<KnownGap>& gaps, const std::string& path);

struct MetricStats {
  std::size_t rows = 0;
  double mean_abs_error_pct = 0;
  double mean_abs_error_abs = 0;  // in the metric's unit (the bubble's target is absolute)
  double worst_error_pct = 0;
  double worst_error_abs = 0;     // of the same row
  std::string worst_name;
  std::size_t outside = 0;  // rows outside the tolerance
};
MetricStats metric_stats(const std::vector<RunValidation>& runs, const std::string& metric, bool exclude_gaps);

nlohmann::ordered_json summary_json(const std::vector<RunValidation>& runs, const std::vector<std::string>& inputs,
                                    const std::string& known_gaps_path);
std::string validation_table(const std::vector<RunValidation>& runs);
// The report's section on configurations measured on several hosts (validation_hosts.cpp); empty
// when no configuration ran on more than one host.
std::string hosts_markdown(const std::vector<RunValidation>& runs);

// Which configuration wins (validation_rankings.cpp): over pairs of runs of one model on the same
// GPUs that ran different configurations, whether the replay orders them by throughput as measured.
// Pairs measured within RANKING_NOISE of each other are counted apart (a host's pace moves a small
// row's step by more between launches: reports/validation/README.md).
inline constexpr double RANKING_NOISE = 0.10;
struct RankingDisagreement {
  std::string measured_faster, other;
  double measured_ratio = 0, predicted_ratio = 0;  // throughput of measured_faster over other's
};
struct RankingStats {
  int pairs = 0, agree = 0;            // every pair; those the replay orders as measured
  int apart_pairs = 0, apart_agree = 0;  // the pairs measured more than RANKING_NOISE apart
  std::vector<RankingDisagreement> disagreements;
};
RankingStats ranking_stats(const std::vector<RunValidation>& runs);
nlohmann::ordered_json ranking_json(const RankingStats& s);
// The report's section (empty when no model ran in two configurations on the same GPUs).
std::string rankings_markdown(const std::vector<RunValidation>& runs);

// The report's section on FSDP2's accumulating copies' pages (validation_fresh_pages.cpp); empty
// when no run makes such copies.
std::string fresh_pages_markdown(const std::vector<RunValidation>& runs);
// Runs measured in several launches (validation_launches.cpp): the report's section, and whether a
// run's launches recorded their host's steal.
std::string launches_markdown(const std::vector<RunValidation>& runs);
bool launch_steal_recorded(const MeasuredRun& r);
// GPU kernel time by class (validation_kernels.cpp): the report's section, a run's line in the
// table and its entry in summary.json's runs; empty where the run has no kernel classes.
std::string kernels_markdown(const std::vector<RunValidation>& runs);
std::string kernel_classes_line(const RunValidation& v);
nlohmann::ordered_json kernel_classes_json(const RunValidation& v);
// `regenerate_command`: the command that wrote the report, as the report states it.
std::string validation_markdown(const std::vector<RunValidation>& runs, const std::vector<std::string>& inputs,
                                const std::string& known_gaps_path, const std::string& regenerate_command);
// The report's charts, in the order validation_charts returns them.
inline constexpr const char* CHART_FILES[] = {"step_time.svg", "peak_allocated.svg", "errors.svg"};
// (file name, SVG text) of the report's charts.
std::vector<std::pair<std::string, std::string>> validation_charts(const std::vector<RunValidation>& runs);

}  // namespace trainsim::planner
