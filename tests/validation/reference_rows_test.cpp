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

// reports/validation/reference/README.md, "The reference's own storage chunking (branch
// ref-storage3)": the replay streams this stack's optimizer states as the reference does (4 Mi-
// parameter chunks, a read and a write in flight together, StackStates::storage_lockstep); the
// L32 row's machine (call 16) measured reads and writes each alone, not at once, so its replay moves
// them on separate channels, each at its full rate, and nearly every read hides behind a write:
// -50.6%. With its own machine's mixed figure it would come in only if that figure held for its
// 16 GB-per-rank files: a rerun of the row on another VM (ref-storage3 call 1, 33.07 s, its JSON
// lost) replays at that VM's own mixed figure at -17.2% (not known why the row streams slower than
// the bench: the bench's files are 1 GiB, the row's 16 GB per rank, and the disk drifted within
// that call, writes alone 3.17 then 2.37 GB/s). No constant is fitted to it.
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
