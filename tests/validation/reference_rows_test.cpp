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

// reports/validation/reference/README.md, "The storage row at a second size (branch
// ref-storage2)": the replay reads the second of DeepSpeed's two 1e9-parameter sub-groups while
// it writes the first, on storage whose reads and writes each keep their full rate, where the
// reference's optimizer phase, a read and a write in flight together, took 1.12 times what its
// bytes take read and written one after the other at its machine's calibrated rates. Costed with
// its own machine's storage (machine_storage: writes 23% slower than the profile's), -19.8%. The
// mixed read+write figure that would cap the overlap (measured on another VM instance,
// reports/calibration/h200x2/storage_mixed: -8.6% as a what-if) is not that machine's, so it is
// not applied.
const std::set<std::string> STEP_TIME_OUTSIDE = {"h200x2_ref-infinity-storage_L32-h2560_mb1x2"};

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
  EXPECT_EQ(step_rows, 21);
}

}  // namespace
}  // namespace trainsim::test
