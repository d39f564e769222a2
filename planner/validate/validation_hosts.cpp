// The report's section on configurations measured on several hosts: one configuration (the same
// model, strategy and stack: MeasuredRun::configuration) whose runs came from machines calibrated
// apart, each run costed on its own host's profile. The replay's steps differ between hosts only by
// what their calibrations measured; the measured steps by everything that differs between the hosts.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "validation.hpp"

namespace trainsim::planner {
namespace {

std::string launches_text(const MeasuredRun& r) {
  if (r.launch_step_times_s.empty()) return "-";
  std::string s;
  for (double t : r.launch_step_times_s) s += fmt::format("{}{:.1f}", s.empty() ? "" : ", ", t * 1e3);
  return s;
}

}  // namespace

std::string hosts_markdown(const std::vector<RunValidation>& runs) {
  std::map<std::string, std::vector<const RunValidation*>> by_configuration;
  for (const auto& v : runs) {
    if (!v.run.configuration.empty() && find_row(v, "step_time") != nullptr) by_configuration[v.run.configuration].push_back(&v);
  }
  std::vector<std::vector<const RunValidation*>> groups;
  for (auto& [configuration, group] : by_configuration) {
    std::set<std::string> profiles;
    for (const RunValidation* v : group) profiles.insert(v->profile);
    if (profiles.size() < 2) continue;
    std::sort(group.begin(), group.end(), [](const RunValidation* a, const RunValidation* b) { return a->run.name < b->run.name; });
    groups.push_back(group);
  }
  if (groups.empty()) return {};
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.front()->run.name < b.front()->run.name; });
  std::string table, spreads;
  for (const auto& group : groups) {
    double measured_lo = 1e300, measured_hi = 0, predicted_lo = 1e300, predicted_hi = 0;
    for (const RunValidation* v : group) {
      const ValidationRow& step = *find_row(*v, "step_time");
      const ValidationRow* bubble = find_row(*v, "bubble_fraction");
      table += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {} | {} |\n", v->run.name, v->profile, launches_text(v->run),
                           step.measured * 1e3, step.predicted * 1e3, step.error_pct,
                           bubble ? fmt::format("{:.3f}", bubble->measured) : "-", bubble ? fmt::format("{:.3f}", bubble->predicted) : "-");
      measured_lo = std::min(measured_lo, step.measured);
      measured_hi = std::max(measured_hi, step.measured);
      predicted_lo = std::min(predicted_lo, step.predicted);
      predicted_hi = std::max(predicted_hi, step.predicted);
    }
    spreads += fmt::format("- {}: measured {:.1f}-{:.1f} ms ({:.0f}% apart), predicted {:.1f}-{:.1f} ms ({:.0f}% apart).\n",
                           group.front()->run.name, measured_lo * 1e3, measured_hi * 1e3, 100 * (measured_hi / measured_lo - 1),
                           predicted_lo * 1e3, predicted_hi * 1e3, 100 * (predicted_hi / predicted_lo - 1));
  }
  return fmt::format(
      "## Configurations measured on several hosts\n\n"
      "{} ran on more than one host (the same model, strategy and stack; rows of their own, each costed on the "
      "profile of the host it ran on). Between hosts the prediction moves only by what the hosts' calibrations measured; the "
      "measured step moves by everything that differs between the hosts, the pace of each rank's host among it.\n\n"
      "| run | profile | launches (ms) | row (ms) | predicted (ms) | error | bubble, measured | bubble, predicted |\n"
      "|---|---|---|---|---|---|---|---|\n"
      "{}\n{}\n",
      groups.size() == 1 ? std::string("One configuration") : fmt::format("{} configurations", groups.size()), table, spreads);
}

}  // namespace trainsim::planner
