// The caching-allocator model's rules, each on a sequence whose reserved and allocated bytes follow
// by hand from PyTorch's rules (sim/costs/caching_allocator.hpp).
#include "caching_allocator.hpp"

#include <gtest/gtest.h>

namespace trainsim::sim {
namespace {

constexpr CachingAllocator::Bytes MiB = CachingAllocator::Bytes{1} << 20;

TEST(CachingAllocator, RoundsEveryRequestTo512Bytes) {
  EXPECT_EQ(CachingAllocator::rounded(1), 512u);
  EXPECT_EQ(CachingAllocator::rounded(512), 512u);
  EXPECT_EQ(CachingAllocator::rounded(513), 1024u);
  CachingAllocator a;
  a.malloc(100, 0);
  EXPECT_EQ(a.allocated(), 512u);
  EXPECT_EQ(a.reserved(), 2 * MiB);  // one small-pool segment
}

TEST(CachingAllocator, SegmentSizesBySize) {
  EXPECT_EQ(CachingAllocator::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(11 * MiB + 512), 12 * MiB);
}

TEST(CachingAllocator, SmallRequestsShareATwoMiBSegment) {
  CachingAllocator a;
  a.malloc(MiB, 0);
  a.malloc(MiB, 0);  // the rest of the first segment, exactly
  EXPECT_EQ(a.reserved(), 2 * MiB);
  a.malloc(512, 0);
  EXPECT_EQ(a.reserved(), 4 * MiB);
  EXPECT_EQ(a.segments(), 2u);
}

TEST(CachingAllocator, MidSizedRequestsPackIntoTwentyMiB) {
  CachingAllocator a;
  a.malloc(5 * MiB, 0);  // a 20 MiB segment, split: 15 MiB stay free
  a.malloc(5 * MiB, 0);
  a.malloc(5 * MiB, 0);
  EXPECT_EQ(a.reserved(), 20 * MiB);
  EXPECT_EQ(a.allocated(), 15 * MiB);
  a.malloc(5 * MiB, 0);  // 5 MiB were left: an exact fit, no split
  EXPECT_EQ(a.reserved(), 20 * MiB);
  a.malloc(5 * MiB, 0);
  EXPECT_EQ(a.reserved(), 40 * MiB);
}

TEST(CachingAllocator, ALargeBlockIsSplitOnlyWhenMoreThanOneMiBRemains) {
  CachingAllocator a;
  // 11 MiB: a 12 MiB segment; 1 MiB would remain, which is not more than 1 MiB: the whole block is
  // handed out and counted as allocated.
  a.malloc(11 * MiB, 0);
  EXPECT_EQ(a.reserved(), 12 * MiB);
  EXPECT_EQ(a.allocated(), 12 * MiB);
  // 13 MiB rounds to a 14 MiB segment; what remains is again 1 MiB.
  CachingAllocator b;
  const auto x = b.malloc(13 * MiB, 0);
  b.free(x);
  b.malloc(11 * MiB, 0);  // from the cached 14 MiB block: 3 MiB remain, split off
  EXPECT_EQ(b.allocated(), 11 * MiB);
  EXPECT_EQ(b.reserved(), 14 * MiB);
}

TEST(CachingAllocator, BestFitAmongCachedBlocks) {
  CachingAllocator a;
  const auto y = a.malloc(50 * MiB, 0);  // the lower address
  const auto x = a.malloc(30 * MiB, 0);
  a.free(y);
  a.free(x);
  a.malloc(25 * MiB, 0);  // the smallest that fits, the 30 (first fit by address would take the 50)
  a.malloc(45 * MiB, 0);  // so this one still fits the 50
  EXPECT_EQ(a.reserved(), 80 * MiB);
  a.malloc(40 * MiB, 0);  // nothing of 40 is left: a new segment
  EXPECT_EQ(a.reserved(), 120 * MiB);
}

TEST(CachingAllocator, FreedNeighboursMergeBack) {
  CachingAllocator a;
  const auto whole = a.malloc(100 * MiB, 0);
  a.free(whole);
  const auto p = a.malloc(30 * MiB, 0);
  const auto q = a.malloc(30 * MiB, 0);
  const auto r = a.malloc(30 * MiB, 0);
  EXPECT_EQ(a.reserved(), 100 * MiB);
  a.free(p);
  a.free(r);
  a.malloc(60 * MiB, 0);  // 30 and 40 free at the two ends, apart: no 60 without a new segment
  EXPECT_EQ(a.reserved(), 160 * MiB);
  a.free(q);  // now the first segment is one free block of 100 again
  a.malloc(100 * MiB, 0);
  EXPECT_EQ(a.reserved(), 160 * MiB);
}

TEST(CachingAllocator, ABlockServesOnlyTheStreamItWasAllocatedOn) {
  CachingAllocator a;
  const auto x = a.malloc(64 * MiB, 1);
  a.free(x);
  a.malloc(64 * MiB, 2);
  EXPECT_EQ(a.reserved(), 128 * MiB);
  a.malloc(64 * MiB, 1);
  EXPECT_EQ(a.reserved(), 128 * MiB);
}

TEST(CachingAllocator, EmptyCacheReturnsOnlyWholeFreeSegments) {
  CachingAllocator a;
  const auto x = a.malloc(64 * MiB, 0);
  const auto y = a.malloc(64 * MiB, 0);
  a.malloc(32 * MiB, 0);  // a third segment, kept
  a.free(x);
  a.malloc(16 * MiB, 0);  // from x's free segment, split: that segment is in use again
  a.free(y);
  a.empty_cache();  // x's segment holds z, y's is free: only y's goes
  EXPECT_EQ(a.reserved(), 96 * MiB);
  EXPECT_EQ(a.peak_reserved(), 160 * MiB);
}

TEST(CachingAllocator, AdoptedSegmentsServeLaterRequests) {
  CachingAllocator a;
  const auto ids = a.adopt_segment(0, false, {{40 * MiB, true}, {24 * MiB, false}});
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(a.reserved(), 64 * MiB);
  EXPECT_EQ(a.allocated(), 40 * MiB);
  a.malloc(20 * MiB, 0);  // from the free 24 MiB (4 remain, split)
  EXPECT_EQ(a.reserved(), 64 * MiB);
  a.free(ids[0]);  // [40 free][20][4 free]: the two free blocks are not neighbours
  a.malloc(44 * MiB, 0);
  EXPECT_EQ(a.reserved(), 108 * MiB);
  a.malloc(40 * MiB, 0);  // the adopted block, freed
  EXPECT_EQ(a.reserved(), 108 * MiB);
}

TEST(CachingAllocator, FreeingWhatIsNotAllocatedIsAnError) {
  CachingAllocator a;
  const auto x = a.malloc(MiB, 0);
  a.free(x);
  EXPECT_THROW(a.free(x), std::logic_error);
  EXPECT_THROW(a.free(12345), std::logic_error);
}

}  // namespace
}  // namespace trainsim::sim
