// The rows known to miss their target (reports/validation/known_gaps.json): read strictly, checked
// against the validated runs (every listed row must exist), and marked on the rows.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config_error.hpp"
#include "strict_json.hpp"
#include "validation.hpp"

namespace trainsim::planner {

std::vector<KnownGap> load_known_gaps(const std::string& path) {
  const JsonDocument doc = parse_json_file(path);
  StrictObject root(doc.json, doc.source, "");
  const auto version = root.integer("schema_version", 1, 1000);
  if (version != 1) throw ConfigError(doc.source, "schema_version", "schema version 1", std::to_string(version));
  std::vector<KnownGap> gaps;
  // A row listed twice would take whichever reason came last: the second listing is refused,
  // naming the first.
  std::map<std::pair<std::string, std::string>, std::string> listed;
  for (StrictObject g : root.objects("gaps")) {
    const std::string metric = g.string("metric");
    if (metric != "step_time" && metric != "peak_allocated" && metric != "bubble_fraction" && metric != "fits") {
      throw ConfigError(doc.source, g.path_of("metric"), "a metric with a target: step_time, peak_allocated, bubble_fraction or fits",
                        "\"" + metric + "\"");
    }
    const std::string reason = g.string("reason");
    if (reason.empty()) throw ConfigError(doc.source, g.path_of("reason"), "the reason the rows are outside their target", "\"\"");
    const nlohmann::json& names = g.raw("names");
    if (!names.is_array() || names.empty()) {
      throw ConfigError(doc.source, g.path_of("names"), "a non-empty array of measured-run names", describe_json(names));
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!names[i].is_string()) {
        throw ConfigError(doc.source, g.path_of("names") + "[" + std::to_string(i) + "]", "a measured-run name", describe_json(names[i]));
      }
      const std::string name = names[i].get<std::string>();
      const std::string at = g.path_of("names") + "[" + std::to_string(i) + "]";
      const auto [first, inserted] = listed.emplace(std::pair{name, metric}, at);
      if (!inserted) {
        throw ConfigError(doc.source, at, "each run listed once per metric (" + metric + " of it is listed at " + first->second + ")",
                          "\"" + name + "\" again");
      }
      gaps.push_back({name, metric, reason});
    }
    g.finish();
  }
  root.finish({"description"});
  return gaps;
}

void check_known_gaps(const std::vector<RunValidation>& runs, const std::vector<KnownGap>& gaps, const std::string& path) {
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    bool found = false;
    for (const auto& v : runs) {
      for (const auto& r : v.rows) found = found || (r.name == gaps[i].name && r.metric == gaps[i].metric);
      // A run not predicted has one row in the report: its fits row where it ran out of memory, else its step time.
      found = found || (v.run.name == gaps[i].name && !v.error.empty() && gaps[i].metric == error_metric(v.run));
    }
    if (!found) {
      throw ConfigError(path, "gaps.names", "names of validated runs that have a row of the gap's metric",
                        "\"" + gaps[i].name + "\" " + gaps[i].metric);
    }
  }
}

void apply_known_gaps(std::vector<RunValidation>& runs, const std::vector<KnownGap>& gaps) {
  for (auto& v : runs) {
    for (auto& r : v.rows) {
      for (const auto& g : gaps) {
        if (g.name == r.name && g.metric == r.metric) r.gap = g.reason;
      }
    }
  }
}

}  // namespace trainsim::planner
