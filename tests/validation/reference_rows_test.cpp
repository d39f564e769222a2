// The reference step's rows (issue 11) on the committed measured runs of
// reports/validation/reference: predicted_vs_measured.txt is what `trainsim validate` prints today
// (below its two header lines), every step-time row is within 10% except the ones the README
// there lists as still outside (each with its reason), and those still miss (a row that comes
// within its target must leave the list); every memory row within 10%, every bubble within 0.03.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include "test_support.hpp"

namespace trainsim::test {
namespace {

// No row is outside. The storage rows (reports/validation/reference/README.md, "A storage probe
// beside each step") take their mixed read+write figure from storage probes run right before each
// timed step (the step's read/write pattern on its own state files; scripts/machine_storage.py, its
// rule set before the runs): L32 -7.7% and L24 -3.9%, where a figure from storage benches minutes
// away put L32 outside at +10.9%. No constant is fitted to either. The two near-limit
// ZeRO-Infinity rows are inside too (-4.6%, +1.5%).
const std::set<std::string> STEP_TIME_OUTSIDE = {};

std::string regenerated() {
  const CommandResult r = run_command("cd '" + std::string(TRAINSIM_SOURCE_DIR) + "' && '" + std::string(TRAINSIM_BINARY) +
                                      "' validate --measured reports/validation/reference --no-trace");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string without_header(const std::string& text) {
  std::size_t pos = 0;
  for (int i = 0; i < 2; ++i) pos = text.find('\n', pos) + 1;
  return text.substr(pos);
}

TEST(ReferenceRows, CommittedComparisonIsCurrentAndWithinItsTargets) {
  const std::string committed = read_file(source_path("reports/validation/reference/predicted_vs_measured.txt"));
  const std::string now = regenerated();
  EXPECT_TRUE(without_header(committed) == now)
      << "reports/validation/reference/predicted_vs_measured.txt is stale: regenerate it with "
         "build/trainsim validate --measured reports/validation/reference --no-trace (and its two header lines)";
  std::istringstream lines(now);
  std::string line;
  int step_rows = 0;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string name, metric;
    f >> name >> metric;
    const bool outside = line.find("OUTSIDE") != std::string::npos;
    if (metric == "step_time") {
      ++step_rows;
      EXPECT_EQ(outside, STEP_TIME_OUTSIDE.count(name) == 1) << line;
    } else if (metric == "peak_allocated" || metric == "bubble_fraction") {
      EXPECT_FALSE(outside) << line;
    }
  }
  // 21 rows, the two ZeRO-3 rows with host checkpoints and the two ZeRO-Infinity rows near the GPU
  // memory limit (host L32-h2560 mb9x2, storage L24-h1024 mb20x2).
  EXPECT_EQ(step_rows, 25);
}

// The same comparison as JSON (summary.json: rows, stats and what each run exercised), which the
// binary compiles in for the accuracy every answer states (planner/accuracy.hpp).
TEST(ReferenceRows, CommittedSummaryIsCurrent) {
  const CommandResult r = run_command("cd '" + std::string(TRAINSIM_SOURCE_DIR) + "' && '" + std::string(TRAINSIM_BINARY) +
                                      "' validate --measured reports/validation/reference --no-trace --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_file(source_path("reports/validation/reference/summary.json")) == r.out)
      << "reports/validation/reference/summary.json is stale: regenerate it with build/trainsim validate --measured "
         "reports/validation/reference --no-trace --format json -o reports/validation/reference/summary.json (then rebuild: "
         "the binary compiles it in)";
}

}  // namespace
}  // namespace trainsim::test
