// The instructions' short lists (sim/program/small_vector.hpp): inline, spilled to the heap,
// copied and moved, as a std::vector would behave.
#include <gtest/gtest.h>

#include <vector>

#include "small_vector.hpp"

namespace trainsim::sim {
namespace {

std::vector<int> items(const SmallVector<int, 3>& v) { return {v.begin(), v.end()}; }

TEST(SmallVector, GrowsPastItsInlineElementsKeepingOrder) {
  SmallVector<int, 3> v;
  for (int i = 0; i < 10; ++i) v.push_back(i * i);
  EXPECT_EQ(items(v), (std::vector<int>{0, 1, 4, 9, 16, 25, 36, 49, 64, 81}));
  EXPECT_EQ(v.size(), 10u);
  EXPECT_EQ(v.back(), 81);
  v.clear();
  EXPECT_TRUE(v.empty());
}

TEST(SmallVector, CopiesAndMovesInlineAndSpilledAlike) {
  for (int n : {2, 7}) {
    SmallVector<int, 3> a;
    for (int i = 0; i < n; ++i) a.push_back(i + 1);
    const SmallVector<int, 3> copy = a;
    SmallVector<int, 3> moved = std::move(a);
    EXPECT_EQ(items(copy), items(moved)) << n;
    EXPECT_EQ(static_cast<int>(moved.size()), n);
    EXPECT_TRUE(a.empty());  // NOLINT: the moved-from list is empty, as documented
    a.push_back(42);         // and usable again
    EXPECT_EQ(items(a), (std::vector<int>{42}));
    SmallVector<int, 3> assigned{9, 9, 9, 9, 9};
    assigned = copy;
    EXPECT_EQ(items(assigned), items(copy)) << n;
  }
}

TEST(SmallVector, TakesVectorsAndListsAndAppendsRanges) {
  SmallVector<int, 3> v = std::vector<int>{5, 6};
  v = {1, 2};
  const std::vector<int> more{3, 4, 5, 6};
  v.insert(v.end(), more.begin(), more.end());
  EXPECT_EQ(items(v), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(v.insert(v.begin(), more.begin(), more.end()), std::logic_error);
  EXPECT_TRUE((SmallVector<int, 3>{1, 2} == SmallVector<int, 3>{1, 2}));
  EXPECT_FALSE((SmallVector<int, 3>{1, 2} == SmallVector<int, 3>{1, 2, 3}));
}

}  // namespace
}  // namespace trainsim::sim
