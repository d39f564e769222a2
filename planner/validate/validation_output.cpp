// The outputs of `trainsim validate`: the table printed, summary.json, the Markdown report and its
// SVG charts. Everything is a function of the inputs (no dates, no host names of this machine), so
// the committed report regenerates byte for byte (tests/validation/measured_runs_test.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "validation.hpp"
#include "validation_svg.hpp"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "unknown"
#endif

namespace trainsim::planner {
namespace {

constexpr double GiB = 1073741824.0;

std::string value_text(const ValidationRow& r, double v) {
  if (r.unit == "bytes") return fmt::format("{:.2f} GiB", v / GiB);
  if (r.unit == "s") return v < 1 ? fmt::format("{:.1f} ms", v * 1e3) : fmt::format("{:.3f} s", v);
  return fmt::format("{:.3f}", v);
}

std::string error_text(const ValidationRow& r) {
  if (r.metric == "bubble_fraction") return fmt::format("{:+.3f}", r.error_abs);
  return fmt::format("{:+.1f}%", r.error_pct);
}

std::string status_text(const ValidationRow& r) {
  if (!r.toleranced) return "(no target)";
  if (r.within) return r.gap.empty() ? "ok" : "ok (listed as a gap)";
  return r.gap.empty() ? "OUTSIDE" : "outside (known gap)";
}

const char* const METRICS[] = {"step_time", "peak_allocated", "peak_reserved", "exposed_communication", "bubble_fraction"};

std::vector<std::string> profiles_of(const std::vector<RunValidation>& runs) {
  std::set<std::string> p;
  for (const auto& v : runs) p.insert(v.profile);
  return {p.begin(), p.end()};
}

nlohmann::ordered_json stats_json(const MetricStats& s) {
  return {{"rows", s.rows},
          {"mean_abs_error_pct", s.mean_abs_error_pct},
          {"worst_error_pct", s.worst_error_pct},
          {"worst_name", s.worst_name},
          {"outside_tolerance", s.outside}};
}

}  // namespace

nlohmann::ordered_json summary_json(const std::vector<RunValidation>& runs, const std::vector<std::string>& inputs,
                                    const std::string& known_gaps_path) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["kind"] = "trainsim.validation_summary";
  j["provenance"] = {{"tool", std::string("trainsim ") + TRAINSIM_VERSION},
                     {"command", "trainsim validate"},
                     {"profiles", profiles_of(runs)},
                     {"inputs", inputs},
                     {"known_gaps", known_gaps_path.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(known_gaps_path)},
                     {"stack_behaviour", "workloads/training_stacks.md"}};
  j["tolerances"] = {{"step_time_pct", STEP_TOLERANCE_PCT},
                     {"peak_allocated_pct", MEMORY_TOLERANCE_PCT},
                     {"mean_abs_error_pct", MEAN_TOLERANCE_PCT},
                     {"bubble_fraction_abs", BUBBLE_TOLERANCE}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& v : runs) {
    if (!v.error.empty()) {
      rows.push_back({{"name", v.run.name}, {"metric", "step_time"}, {"predicted", nullptr}, {"measured", v.run.step_time_s},
                      {"error_pct", nullptr}, {"error", v.error}});
      continue;
    }
    for (const auto& r : v.rows) {
      nlohmann::ordered_json e = {{"name", r.name},       {"metric", r.metric},       {"predicted", r.predicted},
                                  {"measured", r.measured}, {"error_pct", r.error_pct}, {"error_abs", r.error_abs},
                                  {"unit", r.unit},        {"toleranced", r.toleranced}, {"within_tolerance", r.within}};
      if (!r.gap.empty()) e["known_gap"] = r.gap;
      rows.push_back(e);
    }
  }
  j["rows"] = rows;
  nlohmann::ordered_json stats;
  for (const char* m : METRICS) {
    stats[m] = {{"all_rows", stats_json(metric_stats(runs, m, false))}, {"without_known_gaps", stats_json(metric_stats(runs, m, true))}};
  }
  j["stats"] = stats;
  return j;
}

std::string validation_table(const std::vector<RunValidation>& runs) {
  std::string out = fmt::format("{:<42} {:<22} {:>12} {:>12} {:>9}  {}\n", "run", "metric", "predicted", "measured", "error", "status");
  for (const auto& v : runs) {
    if (!v.error.empty()) {
      out += fmt::format("{:<42} {:<22} {}\n", v.run.name, "step_time", v.error);
      continue;
    }
    for (const auto& r : v.rows) {
      out += fmt::format("{:<42} {:<22} {:>12} {:>12} {:>9}  {}\n", r.name, r.metric, value_text(r, r.predicted),
                         value_text(r, r.measured), error_text(r), status_text(r));
    }
  }
  out += "\n";
  for (const char* m : {"step_time", "peak_allocated"}) {
    const MetricStats a = metric_stats(runs, m, false), g = metric_stats(runs, m, true);
    out += fmt::format("{}: mean |error| {:.1f}% over {} rows (worst {:+.1f}%, {}); without known gaps {:.1f}% over {} rows\n", m,
                       a.mean_abs_error_pct, a.rows, a.worst_error_pct, a.worst_name, g.mean_abs_error_pct, g.rows);
  }
  return out;
}

std::string validation_markdown(const std::vector<RunValidation>& runs, const std::vector<std::string>& inputs,
                                const std::string& known_gaps_path) {
  std::string md = "# Predicted against measured\n\n";
  md += fmt::format("Written by `trainsim validate` (trainsim {}) from {} measured runs on {}; stack behaviour from "
                    "`workloads/training_stacks.md`; known gaps from `{}`. Regenerate with the command in "
                    "`reports/validation/README.md`.\n\n",
                    TRAINSIM_VERSION, runs.size(), fmt::join(profiles_of(runs), ", "), known_gaps_path.empty() ? "(none)" : known_gaps_path);
  md += fmt::format("Targets: every row within {:.0f}% on step time and peak allocated memory, the mean absolute error of "
                    "each within {:.0f}%, the pipeline bubble within {:.2f}.\n\n",
                    STEP_TOLERANCE_PCT, MEAN_TOLERANCE_PCT, BUBBLE_TOLERANCE);
  md += "| metric | rows | mean abs error | worst row | outside target | without known gaps: rows, mean, worst |\n|---|---|---|---|---|---|\n";
  for (const char* m : METRICS) {
    const MetricStats a = metric_stats(runs, m, false), g = metric_stats(runs, m, true);
    if (a.rows == 0) continue;
    const bool bubble = std::string(m) == "bubble_fraction";
    md += fmt::format("| {} | {} | {:.1f}% | {:+.1f}% ({}) | {} | {}, {:.1f}%, {:+.1f}% |\n", m, a.rows, a.mean_abs_error_pct, a.worst_error_pct,
                      a.worst_name, bubble || std::string(m) == "step_time" || std::string(m) == "peak_allocated" ? std::to_string(a.outside) : "-",
                      g.rows, g.mean_abs_error_pct, g.worst_error_pct);
  }
  md += "\n![step time](step_time.svg)\n\n![peak memory](peak_allocated.svg)\n\n![errors](errors.svg)\n\n";
  md += "## Rows\n\n| run | metric | predicted | measured | error | status |\n|---|---|---|---|---|---|\n";
  for (const auto& v : runs) {
    if (!v.error.empty()) {
      md += fmt::format("| {} | step_time | - | {} | - | {} |\n", v.run.name, fmt::format("{:.3f} s", v.run.step_time_s), v.error);
      continue;
    }
    for (const auto& r : v.rows) {
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.name, r.metric, value_text(r, r.predicted), value_text(r, r.measured),
                        error_text(r), status_text(r));
    }
  }
  md += "\n## Per GPU (pipelines: stage by stage)\n\n| run | predicted peak allocated (GiB) | measured (GiB) |\n|---|---|---|\n";
  for (const auto& v : runs) {
    std::vector<std::string> p, m;
    for (double b : v.predicted_peaks) p.push_back(fmt::format("{:.1f}", b / GiB));
    for (double b : v.run.peak_allocated_bytes) m.push_back(fmt::format("{:.1f}", b / GiB));
    md += fmt::format("| {} | {} | {} |\n", v.run.name, fmt::join(p, " / "), fmt::join(m, " / "));
  }
  md += "\n## Known gaps (rows outside their target, and why)\n\n";
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& v : runs) {
    for (const auto& r : v.rows) {
      if (!r.gap.empty()) by_reason[r.gap].push_back(fmt::format("{} {} ({})", r.name, r.metric, error_text(r)));
    }
  }
  for (const auto& [reason, rows] : by_reason) md += fmt::format("- {}: {}\n", reason, fmt::join(rows, "; "));
  if (by_reason.empty()) md += "None.\n";
  md += "\n## Where every term comes from\n\n";
  std::map<std::string, std::size_t> notes;
  for (const auto& v : runs) {
    for (const auto& n : v.notes) ++notes[n];
  }
  for (const auto& [n, count] : notes) md += fmt::format("- {} ({} runs)\n", n, count);
  md += "\n## Inputs\n\n";
  for (const auto& i : inputs) md += fmt::format("- `{}`\n", i);
  return md;
}

std::vector<std::pair<std::string, std::string>> validation_charts(const std::vector<RunValidation>& runs) {
  std::vector<ScatterPoint> step, mem;
  std::vector<ErrorBar> errors;
  for (const auto& v : runs) {
    for (const auto& r : v.rows) {
      if (r.metric == "step_time") step.push_back({r.measured, r.predicted, r.name});
      if (r.metric == "peak_allocated") mem.push_back({r.measured / GiB, r.predicted / GiB, r.name});
      if (r.metric == "step_time" || r.metric == "peak_allocated") errors.push_back({r.name + " " + r.metric, r.error_pct});
    }
  }
  return {{"step_time.svg", scatter_svg("Step time: predicted against measured (s)", step, STEP_TOLERANCE_PCT)},
          {"peak_allocated.svg", scatter_svg("Peak allocated memory per GPU: predicted against measured (GiB)", mem, MEMORY_TOLERANCE_PCT)},
          {"errors.svg", error_bars_svg("Signed error (%) of step time and peak allocated memory", errors, STEP_TOLERANCE_PCT)}};
}

}  // namespace trainsim::planner
