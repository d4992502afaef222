// The client's process cache under a capacity (ClientOptions::cache_rows): it stays bounded,
// evicted rows read back exactly, the servers stop pushing evicted rows and push them again once
// they are read anew, and SSP reads stay exact throughout.
#include <gtest/gtest.h>

#include <span>
#include <thread>
#include <vector>

#include "in_process_cluster.h"

namespace tessera {
namespace {

using testing::InProcessCluster;

constexpr TableId kTable = 1;
constexpr uint64_t kRows = 4096;
constexpr uint64_t kCapacity = 256;  // 4 rows in each of the client's 64 stripes

TableSpec Values() { return testing::TestTable(kTable, "values", ValueType::kInt64, kRows, 3); }

int64_t Cell(Client& c, RowId row) {
  std::vector<int64_t> v;
  Status s = c.Get<int64_t>(0, kTable, row, &v);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return s.ok() ? v[1] : -1;
}

// Reading 16x the capacity evicts all but about the capacity; every value read is exact, also
// for rows read again after their eviction; each eviction of a row the server had answered ends
// its subscription there (counted once Leave has been acknowledged, i.e. everything applied).
TEST(CacheCapacityTest, StaysBoundedAndEvictedRowsReadBackExactly) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .cache_rows = kCapacity});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Values()).ok());
  for (RowId r = 0; r < kRows; ++r) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, int64_t(r)).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  for (RowId r = 0; r < kRows; ++r) ASSERT_EQ(Cell(c, r), int64_t(r)) << r;
  ClientStats first = c.stats();
  EXPECT_GE(first.evictions, kRows - kCapacity - 64);
  EXPECT_LE(first.evictions, kRows - kCapacity / 2);
  // The first rows were evicted long ago: read again, from the servers, still exact.
  for (RowId r = 0; r < 64; ++r) ASSERT_EQ(Cell(c, r), int64_t(r)) << r;
  ClientStats second = c.stats();
  EXPECT_EQ(second.cold_misses - first.cold_misses, 64u);
  ASSERT_TRUE(c.Leave().ok());
  uint64_t unsubscribed =
      cluster.server(0).stats().unsubscribed_rows + cluster.server(1).stats().unsubscribed_rows;
  EXPECT_EQ(unsubscribed, c.stats().evictions);
}

constexpr uint64_t kBatch = 64;

// A table of `rows` rows of two columns for a reader streaming through it.
TableSpec Stream(uint64_t rows) {
  return testing::TestTable(kTable, "stream", ValueType::kInt64, rows, 2);
}

// Reads rows [0, stream) of kTable (two columns) in batches of kBatch, each requested `ahead`
// batches before it is read (Prefetch, then GetRows), as a loader does; `check(ids, values)`
// sees every batch read.
template <typename Check>
void ReadAhead(Client& c, uint64_t stream, uint64_t ahead, Check check) {
  auto batch = [&](uint64_t b) {
    std::vector<RowId> ids;
    for (RowId r = b * kBatch; r < std::min((b + 1) * kBatch, stream); ++r) ids.push_back(r);
    return ids;
  };
  const uint64_t batches = (stream + kBatch - 1) / kBatch;
  for (uint64_t b = 0; b < std::min(ahead, batches); ++b) {
    ASSERT_TRUE(c.Prefetch(0, kTable, batch(b)).ok());
  }
  std::vector<int64_t> out(kBatch * 2);
  for (uint64_t b = 0; b < batches; ++b) {
    if (b + ahead < batches) {
      ASSERT_TRUE(c.Prefetch(0, kTable, batch(b + ahead)).ok());
    }
    std::vector<RowId> ids = batch(b);
    std::span<int64_t> values(out.data(), ids.size() * 2);
    ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, values).ok());
    check(ids, values);
  }
}

// A reader that requests rows ahead (Prefetch) of reading them, as a loader does: rows that have
// arrived but are not read yet must not be evicted (each would cost a second request and a
// round trip), even though rows already read were read from the cache (hits).
TEST(CacheCapacityTest, RowsRequestedAheadAreNotDroppedBeforeTheyAreRead) {
  constexpr uint64_t kStream = 20000;
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1, .cache_rows = 4096});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Stream(kStream)).ok());
  // 16 batches of 64 in flight.
  ASSERT_NO_FATAL_FAILURE(ReadAhead(c, kStream, 16, [](const auto&, const auto&) {}));
  ClientStats st = c.stats();
  EXPECT_EQ(st.get_requests, kStream) << "rows requested twice: evicted before they were read";
  EXPECT_GE(st.evictions, kStream - 4096 - kBatch);
}

// Batches read ahead that are far larger than the cache (64 rows: one per stripe): the rows
// waiting for replies stay over the capacity until answered, and every value read is exact.
TEST(CacheCapacityTest, BatchesLargerThanTheCacheReadExactly) {
  constexpr uint64_t kStream = 4096;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .cache_rows = 64});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Stream(kStream)).ok());
  for (RowId r = 0; r < kStream; ++r) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, int64_t(r)).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_NO_FATAL_FAILURE(ReadAhead(c, kStream, 4, [](const auto& ids, const auto& values) {
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(values[i * 2 + 1], int64_t(ids[i])) << ids[i];
  }));
  // Bounded by the rows in flight (5 batches at a time), not by the stream.
  EXPECT_GE(c.stats().evictions, kStream - 8 * kBatch);
}

// Batches whose rows all fall in one stripe (a stride of 64 rows, with the one-row blocks a
// 64-row cache has): room is made for more rows than the stripe holds, and every value read is
// exact. (Making room for a run of rows larger than the stripe once swept past its last row.)
TEST(CacheCapacityTest, RunsOfOneStripeLargerThanItsShareReadExactly) {
  constexpr uint64_t kStride = 64;
  constexpr uint64_t kStream = kStride * kBatch;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .cache_rows = 64});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Stream(kStream)).ok());
  for (RowId r = 0; r < kStream; ++r) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, int64_t(r)).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  // Batch b: rows b, b + 64, b + 128, ...; the next two are requested before it is read.
  auto batch = [&](uint64_t b) {
    std::vector<RowId> ids;
    for (uint64_t k = 0; k < kBatch; ++k) ids.push_back(b + k * kStride);
    return ids;
  };
  ASSERT_TRUE(c.Prefetch(0, kTable, batch(0)).ok());
  ASSERT_TRUE(c.Prefetch(0, kTable, batch(1)).ok());
  std::vector<int64_t> out(kBatch * 2);
  for (uint64_t b = 0; b < kStride; ++b) {
    if (b + 2 < kStride) {
      ASSERT_TRUE(c.Prefetch(0, kTable, batch(b + 2)).ok());
    }
    std::vector<RowId> ids = batch(b);
    ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, out).ok());
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(out[i * 2 + 1], int64_t(ids[i])) << ids[i];
  }
  EXPECT_GE(c.stats().evictions, kStream - 4 * kBatch);
}

// Rows read one per block (a stride of 8 rows, with the 8-row blocks a 512-row cache has), then
// their neighbours, which join blocks already cached: the cache holds blocks with any mix of
// rows, stays within its capacity counted in rows (not blocks), and every value read is exact.
TEST(CacheCapacityTest, RowsScatteredOverBlocksStayBoundedAndExact) {
  constexpr uint64_t kCap = 512;  // 8 rows in each of the client's 64 stripes
  constexpr uint64_t kStride = 8;
  constexpr uint64_t kReads = 4 * kCap;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .cache_rows = kCap});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Stream(kStride * kReads)).ok());
  for (RowId r = 0; r < kStride * kReads; ++r) {
    ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, int64_t(r)).ok());
  }
  ASSERT_TRUE(c.Clock(0).ok());
  // Reads rows (first + i) * kStride + offset for i < count, in batches, checking each value.
  auto read = [&](uint64_t first, uint64_t count, uint64_t offset) {
    std::vector<int64_t> out(kBatch * 2);
    for (uint64_t b = 0; b < count; b += kBatch) {
      std::vector<RowId> ids;
      for (uint64_t i = b; i < std::min(b + kBatch, count); ++i) {
        ids.push_back((first + i) * kStride + offset);
      }
      std::span<int64_t> values(out.data(), ids.size() * 2);
      ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, values).ok());
      for (size_t i = 0; i < ids.size(); ++i) {
        ASSERT_EQ(values[i * 2 + 1], int64_t(ids[i])) << ids[i];
      }
    }
  };
  ASSERT_NO_FATAL_FAILURE(read(0, kReads, 0));
  ClientStats first = c.stats();
  EXPECT_GE(first.evictions, kReads - kCap - kBatch);
  EXPECT_LE(first.evictions, kReads - kCap / 2);
  // The neighbours of the last rows read: none is cached, and many share a block with a row
  // that still is.
  ASSERT_NO_FATAL_FAILURE(read(kReads - kCap / 2, kCap / 2, 1));
  ClientStats second = c.stats();
  EXPECT_EQ(second.cold_misses - first.cold_misses, kCap / 2);
  // Nothing is pushed here (no writes), so each row received is one row cached until evicted.
  EXPECT_LE(second.rows_received - second.evictions, kCap + kBatch);
  EXPECT_GE(second.rows_received - second.evictions, kCap / 2);
}

// A run of consecutive rows that fits the capacity fits the stripes too (rows go to stripes in
// blocks of at most a stripe's share): read again, it is all hits, and nothing was evicted. With
// the blocks larger capacities get (8 rows) under this one (4 rows a stripe) the 256 rows would
// land in 32 stripes of 8 rows each and be evicted as they came.
TEST(CacheCapacityTest, ConsecutiveRowsThatFitTheCacheStayCached) {
  constexpr uint64_t kFit = 256;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .cache_rows = kFit});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Stream(4 * kFit)).ok());
  std::vector<RowId> ids;
  for (RowId r = kFit; r < 2 * kFit; ++r) ids.push_back(r);
  std::vector<int64_t> out(kFit * 2);
  ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, out).ok());
  ClientStats first = c.stats();
  ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, out).ok());
  ClientStats second = c.stats();
  EXPECT_EQ(second.evictions, 0u);
  EXPECT_EQ(second.cache_hits - first.cache_hits, kFit);
  EXPECT_EQ(second.get_requests, kFit);
}

// A reader with a small cache and a writer, staleness 0. The servers push only rows the reader
// still caches; a row evicted and read again is pushed again, so a read at the next clock sees
// the writer's update (a server that forgot the re-read row would leave it stale and the read
// would return the old value without asking).
TEST(CacheCapacityTest, EvictedRowsAreNotPushedAndRereadRowsAreAgain) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 2, .cache_rows = kCapacity});
  Client& reader = cluster.client(0);
  Client& writer = cluster.client(1);
  ASSERT_TRUE(reader.CreateTable(Values()).ok());
  ASSERT_TRUE(writer.CreateTable(Values()).ok());
  auto both_clock = [&] {
    std::thread w([&] { ASSERT_TRUE(writer.Clock(0).ok()); });
    ASSERT_TRUE(reader.Clock(0).ok());
    w.join();
  };
  for (RowId r = 0; r < kRows; ++r) ASSERT_EQ(Cell(reader, r), 0) << r;  // clock 0
  // Row 0 is long evicted; read it again: cached and subscribed anew.
  ASSERT_EQ(Cell(reader, 0), 0);
  uint64_t pushed_before =
      cluster.server(0).stats().rows_pushed + cluster.server(1).stats().rows_pushed;
  for (RowId r = 0; r < kRows; ++r) ASSERT_TRUE(writer.Inc<int64_t>(kTable, r, 1, 7).ok());
  both_clock();
  // Clock 1: row 0 was pushed (a cache entry that is not refreshed would still say 0).
  EXPECT_EQ(Cell(reader, 0), 7);
  EXPECT_EQ(Cell(reader, kRows - 1), 7);
  ASSERT_TRUE(reader.Leave().ok());
  ASSERT_TRUE(writer.Leave().ok());
  uint64_t pushed =
      cluster.server(0).stats().rows_pushed + cluster.server(1).stats().rows_pushed - pushed_before;
  EXPECT_GE(pushed, 1u);
  EXPECT_LE(pushed, 2 * kCapacity) << "evicted rows were still pushed";
}

// Several threads of one process read overlapping rows through a small cache while evictions
// run: every read is exact and none waits forever (a read's entry is never evicted under it).
TEST(CacheCapacityTest, ConcurrentReadersThroughASmallCache) {
  InProcessCluster cluster(
      {.num_servers = 2, .num_workers = 1, .threads_per_worker = 4, .cache_rows = 64});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Values()).ok());
  for (RowId r = 0; r < kRows; ++r) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, int64_t(r)).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ASSERT_TRUE(c.Clock(t).ok());
      for (int pass = 0; pass < 2; ++pass) {
        for (RowId r = t; r < kRows; r += 3) {
          std::vector<int64_t> v;
          Status s = c.Get<int64_t>(t, kTable, r, &v);
          ASSERT_TRUE(s.ok()) << s.ToString();
          ASSERT_EQ(v[1], int64_t(r));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_GT(c.stats().evictions, 0u);
}

}  // namespace
}  // namespace tessera
