// The report's section on runs measured in several launches (validation_output.cpp calls it):
// each launch's step beside the prediction, with the host's steal where it was recorded.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "validation.hpp"

namespace trainsim::planner {

// Whether some launch of the run recorded its host's steal.
bool launch_steal_recorded(const MeasuredRun& r) {
  return std::any_of(r.launch_cpu_steal_fractions.begin(), r.launch_cpu_steal_fractions.end(),
                     [](const std::optional<double>& x) { return x.has_value(); });
}

// The rows measured in several launches (fresh process groups, one host): how far the launches lie
// apart against the tolerance, and whether the prediction lies among them. A step that moves more
// between launches than the tolerance cannot be checked to within it by any one launch.
std::string launches_markdown(const std::vector<RunValidation>& runs) {
  std::string table;
  std::vector<double> spans;
  std::size_t inside = 0;
  // The host's steal, where the runs recorded it (each launch's measured.launches[].cpu_steal_fraction,
  // else the row's provenance.cpu_steal_fraction): a column only then.
  const bool steal = std::any_of(runs.begin(), runs.end(), [](const RunValidation& v) {
    return !v.run.launch_step_times_s.empty() && (v.run.cpu_steal_fraction.has_value() || launch_steal_recorded(v.run));
  });
  // How host-bound each prediction is (RunValidation::host_sensitivity): a column where known.
  const bool host = std::any_of(runs.begin(), runs.end(), [](const RunValidation& v) {
    return !v.run.launch_step_times_s.empty() && v.host_sensitivity.has_value();
  });
  for (const auto& v : runs) {
    const auto& l = v.run.launch_step_times_s;
    const ValidationRow* step = find_row(v, "step_time");
    if (l.empty() || !v.error.empty() || step == nullptr) continue;
    const auto [lo, hi] = std::minmax_element(l.begin(), l.end());
    const double span = 100.0 * (*hi - *lo) / v.run.step_time_s;
    spans.push_back(span);
    const double predicted = step->predicted;
    const bool among = predicted >= *lo && predicted <= *hi;
    inside += among ? 1 : 0;
    std::vector<std::string> t;
    for (double x : l) t.push_back(fmt::format("{:.1f}", x * 1e3));
    table += fmt::format("| {} | {} | {:.1f} | {:.0f}% | {:.1f} | {:+.1f}% | {} |", v.run.name, fmt::join(t, ", "), v.run.step_time_s * 1e3,
                         span, predicted * 1e3, step->error_pct, among ? "yes" : "no");
    if (host) table += v.host_sensitivity ? fmt::format(" {:.2f} |", *v.host_sensitivity) : std::string(" - |");
    if (steal && launch_steal_recorded(v.run)) {
      std::vector<std::string> per;
      for (const auto& x : v.run.launch_cpu_steal_fractions) per.push_back(x ? fmt::format("{:.1f}%", 100 * *x) : "not recorded");
      table += fmt::format(" {} |", fmt::join(per, ", "));
    } else if (steal) {
      table += v.run.cpu_steal_fraction ? fmt::format(" {:.1f}% |", 100 * *v.run.cpu_steal_fraction) : std::string(" not recorded |");
    }
    table += "\n";
  }
  if (spans.empty()) return {};
  std::vector<double> sorted = spans;
  std::sort(sorted.begin(), sorted.end());
  const auto wider = std::count_if(spans.begin(), spans.end(), [](double s) { return s > 2 * STEP_TOLERANCE_PCT; });
  return fmt::format("## Rows measured in several launches\n\n"
                     "{} rows ran in several launches each (fresh process groups on one host, `measured.launches`); the row is the "
                     "launch with the median step time, whole. Their launches lie {:.0f}% to {:.0f}% of that median apart (median "
                     "{:.0f}%); {} of them more than twice the step-time tolerance, so one launch can miss a prediction by more "
                     "than {:.0f}% that another launch meets. The prediction lies among the launches for {} of the {}.\n\n"
                     "{}{}| run | launches (ms) | row (ms) | max - min, of the row | predicted (ms) | error | predicted within the launches |{}{}\n"
                     "|---|---|---|---|---|---|---|{}{}\n{}\n",
                     spans.size(), sorted.front(), sorted.back(), sorted[sorted.size() / 2], wider, STEP_TOLERANCE_PCT, inside,
                     spans.size(),
                     host ? fmt::format("The replay's host sensitivity is how much of the predicted step moves with the host: "
                                        "the relative change of the predicted step when the profile's host dispatch figures for the run's "
                                        "stack (per layer, micro-batch and step) grow by {:.0f}%, per {:.0f}% (0: the host is never on the step's critical path; 1: the "
                                        "step moves as the host does). A prediction near 1 rests on the host's figures as much as "
                                        "on the GPU's, so it can be no steadier than its host.\n\n",
                                        100 * HOST_SENSITIVITY_PROBE, 100 * HOST_SENSITIVITY_PROBE)
                          : std::string(),
                     steal ? "The host's steal is the hypervisor's share of the CPU time the machine used or had taken (steal / "
                             "(user + nice + system + irq + softirq + steal) in /proc/stat; idle time not counted) over each launch's "
                             "timed steps, in launch order (`measured.launches[].cpu_steal_fraction`), or over the row's "
                             "(`provenance.cpu_steal_fraction`): a host that loses CPU time stalls a host-bound step.\n\n"
                           : "",
                     host ? " replay's host sensitivity |" : "", steal ? " host's steal |" : "", host ? "---|" : "",
                     steal ? "---|" : "", table);
}

}  // namespace trainsim::planner
