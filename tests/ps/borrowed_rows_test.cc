// Cached rows that point into the reply they came in instead of holding a copy (see
// CacheEntry::borrowed in client.cc): values stay exact through reads, own updates and pushes,
// and a reply is kept only while rows read at most once point into it
// (ClientStats::replies_held), so memory stays bounded by what the cache holds.
#include <gtest/gtest.h>

#include <future>
#include <span>
#include <vector>

#include "in_process_cluster.h"

namespace tessera {
namespace {

using testing::InProcessCluster;

constexpr TableId kTable = 1;
constexpr uint64_t kBatch = 64;

// Rows of two int64 columns; row r holds (0, r) once Fill has run.
TableSpec Rows(uint64_t rows) {
  return testing::TestTable(kTable, "rows", ValueType::kInt64, rows, 2);
}

void Fill(Client& c, uint64_t rows) {
  for (RowId r = 0; r < rows; ++r) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, int64_t(r)).ok());
  ASSERT_TRUE(c.Clock(0).ok());
}

std::vector<RowId> Batch(uint64_t b) {
  std::vector<RowId> ids;
  for (RowId r = b * kBatch; r < (b + 1) * kBatch; ++r) ids.push_back(r);
  return ids;
}

// Reads batch b with GetRows and checks every row's second column against `expected(row)`.
template <typename Expected>
void ReadBatch(Client& c, uint64_t b, Expected expected) {
  std::vector<int64_t> out(kBatch * 2);
  std::vector<RowId> ids = Batch(b);
  ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, std::span<int64_t>(out)).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(out[i * 2], 0) << ids[i];
    ASSERT_EQ(out[i * 2 + 1], expected(ids[i])) << ids[i];
  }
}

// Creates a table of one batch, fills it and reads it once (one server: one request, one reply):
// the reply is kept.
void ReadOneReplyOnce(Client& c) {
  ASSERT_TRUE(c.CreateTable(Rows(kBatch)).ok());
  ASSERT_NO_FATAL_FAILURE(Fill(c, kBatch));
  ASSERT_NO_FATAL_FAILURE(ReadBatch(c, 0, [](RowId r) { return int64_t(r); }));
  ASSERT_EQ(c.stats().replies_held, 1u);
}

// One server, so each batch read is one request and one reply. Read once, every batch's reply
// is kept (its rows point into it); read again, the rows are copied and no reply is kept.
TEST(BorrowedRowsTest, RowsReadOnceKeepTheirReplyAndRowsReadAgainAreCopied) {
  constexpr uint64_t kBatches = 4;
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Rows(kBatches * kBatch)).ok());
  ASSERT_NO_FATAL_FAILURE(Fill(c, kBatches * kBatch));
  auto same = [](RowId r) { return int64_t(r); };
  for (uint64_t b = 0; b < kBatches; ++b) ASSERT_NO_FATAL_FAILURE(ReadBatch(c, b, same));
  EXPECT_EQ(c.stats().replies_held, kBatches);
  for (uint64_t b = 0; b < kBatches; ++b) ASSERT_NO_FATAL_FAILURE(ReadBatch(c, b, same));
  EXPECT_EQ(c.stats().replies_held, 0u);
  EXPECT_EQ(c.stats().cache_hits, kBatches * kBatch);
  // Copies read exactly too.
  for (uint64_t b = 0; b < kBatches; ++b) ASSERT_NO_FATAL_FAILURE(ReadBatch(c, b, same));
}

// A single-row read hands out a copy: the row is copied into the cache and its reply let go.
TEST(BorrowedRowsTest, SingleRowReadsCopyTheRow) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_NO_FATAL_FAILURE(ReadOneReplyOnce(c));
  std::vector<int64_t> row;
  for (RowId r = 0; r < kBatch; ++r) {
    ASSERT_TRUE(c.Get<int64_t>(0, kTable, r, &row).ok());
    ASSERT_EQ(row[1], int64_t(r));
  }
  EXPECT_EQ(c.stats().replies_held, 0u);
}

// Own updates of borrowed rows (read-my-writes) change a copy, never the reply: the rows read
// back with the updates, the rows not updated read back unchanged, and once every row of the
// reply has been updated it is let go.
TEST(BorrowedRowsTest, OwnUpdatesOfBorrowedRowsChangeACopy) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_NO_FATAL_FAILURE(ReadOneReplyOnce(c));
  for (RowId r = 0; r < kBatch; r += 2) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, 1000).ok());
  EXPECT_EQ(c.stats().replies_held, 1u);  // the odd rows still point into it
  auto half = [](RowId r) { return int64_t(r) + (r % 2 == 0 ? 1000 : 0); };
  ASSERT_NO_FATAL_FAILURE(ReadBatch(c, 0, half));
  for (RowId r = 1; r < kBatch; r += 2) ASSERT_TRUE(c.Inc<int64_t>(kTable, r, 1, 1000).ok());
  EXPECT_EQ(c.stats().replies_held, 0u);
  auto all = [](RowId r) { return int64_t(r) + 1000; };
  ASSERT_NO_FATAL_FAILURE(ReadBatch(c, 0, all));
  // After the clock the updates come back from the server: counted once, not twice.
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_NO_FATAL_FAILURE(ReadBatch(c, 0, all));
}

// A push that refreshes borrowed rows is copied: the reply is let go, and the rows read the
// other worker's updates.
TEST(BorrowedRowsTest, PushedRowsAreCopied) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 2});
  Client& reader = cluster.client(0);
  Client& writer = cluster.client(1);
  ASSERT_TRUE(reader.CreateTable(Rows(kBatch)).ok());
  ASSERT_TRUE(writer.CreateTable(Rows(kBatch)).ok());
  ASSERT_NO_FATAL_FAILURE(Fill(writer, kBatch));
  ASSERT_TRUE(reader.Clock(0).ok());
  // At clock 1 with staleness 0 the read sees the writer's clock-0 updates.
  ASSERT_NO_FATAL_FAILURE(ReadBatch(reader, 0, [](RowId r) { return int64_t(r); }));
  ASSERT_EQ(reader.stats().replies_held, 1u);
  for (RowId r = 0; r < kBatch; ++r) ASSERT_TRUE(writer.Inc<int64_t>(kTable, r, 1, 7).ok());
  ASSERT_TRUE(writer.Clock(0).ok());
  ASSERT_TRUE(reader.Clock(0).ok());
  const uint64_t requests = reader.stats().get_requests;
  // Clock 2: the writer's clock-1 updates must be visible; they come by push.
  ASSERT_NO_FATAL_FAILURE(ReadBatch(reader, 0, [](RowId r) { return int64_t(r) + 7; }));
  EXPECT_EQ(reader.stats().get_requests, requests);
  EXPECT_GT(reader.stats().pushes, 0u);
  EXPECT_EQ(reader.stats().replies_held, 0u);
}

// A reader streaming through a table 16x its cache keeps only the replies of rows still cached:
// eviction lets go of them, so memory is bounded by the capacity, not by the stream.
TEST(BorrowedRowsTest, StreamingThroughABoundedCacheKeepsFewReplies) {
  constexpr uint64_t kCapacity = 256;
  constexpr uint64_t kBatches = 64;
  constexpr uint64_t kAhead = 4;
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1, .cache_rows = kCapacity});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Rows(kBatches * kBatch)).ok());
  ASSERT_NO_FATAL_FAILURE(Fill(c, kBatches * kBatch));
  for (uint64_t b = 0; b < kAhead; ++b) ASSERT_TRUE(c.Prefetch(0, kTable, Batch(b)).ok());
  uint64_t most_held = 0;
  for (uint64_t b = 0; b < kBatches; ++b) {
    if (b + kAhead < kBatches) {
      ASSERT_TRUE(c.Prefetch(0, kTable, Batch(b + kAhead)).ok());
    }
    ASSERT_NO_FATAL_FAILURE(ReadBatch(c, b, [](RowId r) { return int64_t(r); }));
    most_held = std::max(most_held, c.stats().replies_held);
  }
  // The cache holds the capacity plus the batches in flight; a reply is kept by rows of it that
  // are cached. Without eviction letting go, all 64 would be.
  EXPECT_LE(most_held, (kCapacity + (kAhead + 1) * kBatch) / kBatch + 1);
  EXPECT_GT(c.stats().evictions, 0u);
}

}  // namespace
}  // namespace tessera
