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

// reports/validation/reference/README.md, "The storage row's own machine at row-sized files (branch
// ref-storage4)": the L32 storage row (ref-storage4 call 1, 28.625 s) is replayed with its own
// machine's storage measured in the same call with files of its own working set (16 GiB: read,
// write and the 2-stream mixed figure, the mean of the benches before and after it) and the
// reference's own chunking: +10.9%, just outside. The row streamed 2.26 GB/s read+write together
// where those benches measured 1.95 and 2.09 (the 1 GiB ones 2.01 and 2.47); the same row on other
// VMs moved 2.30 (call 16) and about 1.93 (ref-storage3 call 1, from its step). The device's rate moves by more
// than 10% between minutes of one call, and a bench of a few seconds beside the row does not pin it
// closer. No constant is fitted to it.
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
