// RowLayout: the bookkeeping of which workers hold which rows of a partitioned array.
#include "distributed/row_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::internal {
namespace {

uint64_t Bit(int w) { return uint64_t{1} << w; }

TEST(RowLayoutTest, StartsReplicatedAndAssignsPieces) {
  RowLayout l(100, 3);
  EXPECT_TRUE(l.replicated());
  EXPECT_EQ(l.RowsHeldBy(2), 100);
  l.Assign(10, 40, Bit(1));
  EXPECT_FALSE(l.replicated());
  EXPECT_EQ(l.RowsHeldBy(0), 70);
  EXPECT_EQ(l.RowsHeldBy(1), 100);
  std::vector<std::pair<int64_t, int64_t>> pieces;
  l.ForEach(0, 100, [&](int64_t lo, int64_t hi, uint64_t) { pieces.push_back({lo, hi}); });
  EXPECT_EQ(pieces, (std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {10, 40}, {40, 100}}));
  l.Assign(0, 100, l.all());  // merges back into one piece
  pieces.clear();
  l.ForEach(0, 100, [&](int64_t lo, int64_t hi, uint64_t) { pieces.push_back({lo, hi}); });
  EXPECT_EQ(pieces.size(), 1u);
  EXPECT_TRUE(l.replicated());
}

TEST(RowLayoutTest, RedistributeSendsFromTheLowestHolderAndKeepsOnlyNeeders) {
  RowLayout l(100, 2);
  // From replicated: nothing moves, each worker keeps what it needs, unneeded rows stay shared.
  std::vector<RowTransfer> t = Redistribute({{{0, 50}}, {{50, 90}}}, &l);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(l.RowsHeldBy(0), 60);  // [0, 50) and the unneeded [90, 100)
  EXPECT_EQ(l.RowsHeldBy(1), 50);
  // Another split: rows [40, 50) move from 0 to 1, [50, 60) from 1 to 0; [90, 100), held by
  // both, stays with 1 only.
  t = Redistribute({{{0, 40}, {50, 60}}, {{40, 50}, {60, 100}}}, &l);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].from, 0);
  EXPECT_EQ(t[0].to, 1);
  EXPECT_EQ(t[0].lo, 40);
  EXPECT_EQ(t[0].hi, 50);
  EXPECT_EQ(t[1].from, 1);
  EXPECT_EQ(t[1].to, 0);
  EXPECT_EQ(t[1].lo, 50);
  EXPECT_EQ(t[1].hi, 60);
  EXPECT_EQ(l.RowsHeldBy(0), 50);
  EXPECT_EQ(l.RowsHeldBy(1), 50);
}

TEST(RowLayoutTest, EveryoneNeedingEverythingReplicates) {
  RowLayout l(10, 3);
  Redistribute({{{0, 4}}, {{4, 7}}, {{7, 10}}}, &l);
  std::vector<RowTransfer> t = Redistribute({{{0, 10}}, {{0, 10}}, {{0, 10}}}, &l);
  EXPECT_EQ(t.size(), 6u);  // each worker's third to each of the two others
  EXPECT_TRUE(l.replicated());
}

TEST(RowNormalizeTest, MergesOverlapsAndDropsEmpty) {
  const auto n = Normalize({{5, 8}, {0, 2}, {7, 10}, {3, 3}, {2, 4}});
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].lo, 0);
  EXPECT_EQ(n[0].hi, 4);
  EXPECT_EQ(n[1].lo, 5);
  EXPECT_EQ(n[1].hi, 10);
}

}  // namespace
}  // namespace tessera::internal
