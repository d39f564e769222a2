#pragma once
// Which parts a run measures, at how many sizes, to fit --budget: a pure function of the parts'
// estimated seconds, so it is tested without hardware (tests/calibrate/run_plan_test.cpp).

#include <optional>
#include <string>
#include <vector>

#include "options.hpp"

namespace trainsim::calibrate {

struct PlanItem {
  std::string name;
  bool framework = false;        // run by the framework driver (its start is paid once)
  std::vector<double> seconds;   // estimated seconds at level 1, 2, ... (cumulative); size() = the mode's level
  std::string level_unit;        // "sizes" for the driver's parts; "" for ours (level 1 quick, 2 full)
};

struct PlannedPart {
  std::string name;
  bool framework = false;
  int level = 0;                 // 1-based
  double seconds = 0;            // estimated
};

struct RunPlan {
  std::vector<PlannedPart> parts;   // in the order of the items
  std::vector<std::string> left_out;  // one line per part left out or cut to fewer sizes
  double seconds = 0;               // estimated, the driver's start included
};

// Without a budget every item runs at its last level. With one, in the items' order (their
// priority), every item that fits gets its first level, then each in turn is raised to the
// highest level that still fits; the driver's start counts once, with the first framework item.
RunPlan plan_run(const std::vector<PlanItem>& items, std::optional<double> budget_s, double framework_startup_s);

// Estimated seconds of our own parts at quick and full (one H200 node of 2 GPUs: the committed
// runs' provenance.seconds, reports/calibration/h200x2/ and reports/calibration/interference/).
std::vector<double> native_part_seconds(Part part, Mode mode);

}  // namespace trainsim::calibrate
