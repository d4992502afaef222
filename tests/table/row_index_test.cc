#include "tessera/table/row_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace tessera {
namespace {

struct Entry {
  uint64_t row = 0;
  int hits = 0;
};

// Against std::map: every row is found, new rows start value-initialized, and entries never move
// while the index grows (callers keep pointers to them).
TEST(RowIndexTest, FindsEveryRowAndEntriesStayPut) {
  RowIndex<Entry> index;
  std::map<uint64_t, Entry*> seen;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    // Strided rows (what one stripe of a table holds), random ones, and repeats.
    uint64_t row = i % 3 == 0 ? uint64_t(i) * 64 : i % 3 == 1 ? rng() : uint64_t(i % 100) * 64;
    auto [entry, added] = index.FindOrAdd(row);
    ASSERT_EQ(added, seen.count(row) == 0) << row;
    if (added) {
      EXPECT_EQ(entry->row, 0u);
      EXPECT_EQ(entry->hits, 0);
      entry->row = row;
      seen[row] = entry;
    }
    ASSERT_EQ(entry, seen[row]);
    ++entry->hits;
  }
  EXPECT_EQ(index.size(), seen.size());
  for (const auto& [row, entry] : seen) {
    ASSERT_EQ(index.Find(row), entry);
    EXPECT_EQ(entry->row, row);
  }
  EXPECT_EQ(index.Find(12345), nullptr);  // not a multiple of 64, and no random hit
  RowIndex<Entry> empty;
  EXPECT_EQ(empty.Find(0), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

// Random adds and erases against std::map, on rows that collide a lot (a few groups, strided, and
// consecutive runs): every remaining row is found with its entry, erased ones are gone, and new
// rows reuse erased entries, value-initialized, instead of growing the chunks.
TEST(RowIndexTest, EraseKeepsTheOthersAndReusesEntries) {
  RowIndex<Entry> index;
  std::map<uint64_t, Entry*> live;
  std::mt19937_64 rng(11);
  std::set<Entry*> ever;
  for (int i = 0; i < 200000; ++i) {
    uint64_t row = rng() % 4 == 0 ? rng() % 4096 * 64 : rng() % 3000;
    if (rng() % 3 == 0) {
      bool was = live.erase(row) > 0;
      ASSERT_EQ(index.Erase(row), was) << row;
      ASSERT_EQ(index.Find(row), nullptr) << row;
    } else {
      auto [entry, added] = index.FindOrAdd(row);
      ASSERT_EQ(added, live.count(row) == 0) << row;
      if (added) {
        ASSERT_EQ(entry->row, 0u);
        ASSERT_EQ(entry->hits, 0);
        entry->row = row;
        live[row] = entry;
        ever.insert(entry);
      }
      ASSERT_EQ(entry, live[row]);
      ++entry->hits;
    }
    ASSERT_EQ(index.size(), live.size());
  }
  for (const auto& [row, entry] : live) {
    ASSERT_EQ(index.Find(row), entry) << row;
    EXPECT_EQ(entry->row, row);
  }
  // At most as many entries were ever handed out as rows were live at the peak (< 7096).
  EXPECT_LT(ever.size(), 7096u);
  EXPECT_FALSE(RowIndex<Entry>().Erase(3));
}

}  // namespace
}  // namespace tessera
