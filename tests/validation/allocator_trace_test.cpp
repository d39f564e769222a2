// The caching-allocator model (sim/costs/caching_allocator.hpp) against the allocator's own record of the
// measured rows' configurations (reports/validation/allocator/): every request
// and free PyTorch's caching allocator served from the build to the end of the timed steps, replayed
// through the model from the segments it held at the start (planner/validate/allocator_record.hpp,
// what `trainsim validate --allocator-record` runs), must give the rank's measured
// `max_memory_reserved` over the timed steps within 1% (the rule written before the records were
// taken). The model knows nothing of the records but their requests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "allocator_record.hpp"

namespace trainsim::planner {
namespace {

constexpr double TOLERANCE_PCT = 1.0;

TEST(AllocatorTrace, ReplayedRequestsGiveTheMeasuredReservedPeak) {
  const auto files = allocator_record_files(std::string(TRAINSIM_SOURCE_DIR) + "/reports/validation/allocator");
  ASSERT_EQ(files.size(), 18u) << "the allocator records of reports/validation/allocator/ are missing";
  for (const auto& f : files) {
    const AllocatorReplay r = replay_allocator_record(load_allocator_record(f));
    EXPECT_LE(std::abs(r.error_pct()), TOLERANCE_PCT) << f << ": replayed " << r.replayed_reserved_bytes / (1 << 30) << " GiB, measured "
                                                      << r.measured_reserved_bytes / (1 << 30) << " GiB";
  }
}

}  // namespace
}  // namespace trainsim::planner
