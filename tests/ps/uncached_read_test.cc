// Uncached reads (Client::StartUncachedRead / WaitUncachedRead): the same values as GetRows,
// own writes included, without the process cache or the servers' pushes; bad calls refused;
// an abandoned read no longer writes its buffer.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "in_process_cluster.h"

namespace tessera {
namespace {

using testing::InProcessCluster;

TableSpec Dense(TableId id, ValueType type, uint64_t rows, uint32_t width) {
  return testing::TestTable(id, "t" + std::to_string(id), type, rows, width);
}

template <typename T>
Status ReadUncached(Client& c, TableId table, const std::vector<RowId>& rows, std::vector<T>* out) {
  auto ticket = c.StartUncachedRead<T>(0, table, rows, *out);
  if (!ticket.ok()) return ticket.status();
  return c.WaitUncachedRead(*ticket);
}

// Rows of both servers, in any order and repeated, with writes of earlier clocks and writes
// not sent yet: what GetRows returns, for float and int64 tables, and the cache is not touched.
TEST(UncachedReadTest, MatchesGetRowsWithOwnWritesAndLeavesTheCacheAlone) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Dense(1, ValueType::kFloat32, 64, 3)).ok());
  ASSERT_TRUE(c.CreateTable(Dense(2, ValueType::kInt64, 64, 2)).ok());
  for (RowId r = 0; r < 64; r += 3) {
    ASSERT_TRUE(c.Inc<float>(1, r, 1, float(r)).ok());
    ASSERT_TRUE(c.Inc<int64_t>(2, r, 0, int64_t(r) * 10).ok());
  }
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Inc<float>(1, 6, 2, 0.5f).ok());  // not sent yet: read-my-writes
  ASSERT_TRUE(c.Inc<int64_t>(2, 9, 1, 7).ok());
  const std::vector<RowId> ids = {9, 0, 63, 6, 9, 17, 33, 6};

  std::vector<float> got(ids.size() * 3, -1.0f);
  ASSERT_TRUE(ReadUncached(c, 1, ids, &got).ok());
  std::vector<int64_t> got64(ids.size() * 2, -1);
  ASSERT_TRUE(ReadUncached(c, 2, ids, &got64).ok());
  ClientStats stats = c.stats();
  EXPECT_EQ(stats.uncached_rows, 2 * ids.size());
  EXPECT_EQ(stats.reads, 2 * ids.size());
  EXPECT_EQ(stats.cold_misses + stats.cache_hits + stats.stale_waits, 0u);
  EXPECT_EQ(stats.get_requests, 2 * ids.size());
  EXPECT_EQ(got[3 * 3 + 1], 6.0f);  // row 6
  EXPECT_EQ(got[3 * 3 + 2], 0.5f);
  EXPECT_EQ(got64[2 * 0 + 0], 90);  // row 9
  EXPECT_EQ(got64[2 * 0 + 1], 7);

  std::vector<float> cached(ids.size() * 3);
  ASSERT_TRUE(c.GetRows<float>(0, 1, ids, cached).ok());
  EXPECT_EQ(got, cached);
  std::vector<int64_t> cached64(ids.size() * 2);
  ASSERT_TRUE(c.GetRows<int64_t>(0, 2, ids, cached64).ok());
  EXPECT_EQ(got64, cached64);
  // The cached reads were all misses: the uncached ones left nothing behind.
  EXPECT_EQ(c.stats().cache_hits, 0u);
}

// Only the rows read through the cache are pushed when another worker changes them.
TEST(UncachedReadTest, RowsReadUncachedAreNotPushed) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 2});
  Client& reader = cluster.client(0);
  Client& writer = cluster.client(1);
  for (Client* c : {&reader, &writer})
    ASSERT_TRUE(c->CreateTable(Dense(1, ValueType::kFloat32, 16, 2)).ok());
  std::vector<RowId> uncached_rows, cached_rows, all;
  for (RowId r = 0; r < 16; ++r) {
    (r < 8 ? uncached_rows : cached_rows).push_back(r);
    all.push_back(r);
  }
  std::vector<float> out(8 * 2);
  ASSERT_TRUE(ReadUncached(reader, 1, uncached_rows, &out).ok());
  ASSERT_TRUE(reader.GetRows<float>(0, 1, cached_rows, out).ok());
  for (RowId r : all) ASSERT_TRUE(writer.Inc<float>(1, r, 0, 1.0f + r).ok());
  ASSERT_TRUE(writer.Clock(0).ok());
  ASSERT_TRUE(reader.Clock(0).ok());
  // At clock 1 with staleness 0 the read waits for the server's clock 1; the server pushes
  // the changed rows its readers hold before it answers.
  std::vector<float> after(16 * 2, -1.0f);
  ASSERT_TRUE(ReadUncached(reader, 1, all, &after).ok());
  for (RowId r : all) {
    EXPECT_EQ(after[2 * r], 1.0f + r) << r;
    EXPECT_EQ(after[2 * r + 1], 0.0f) << r;
  }
  EXPECT_EQ(cluster.server(0).stats().rows_pushed, cached_rows.size());
}

// A read parked by the SSP bound: own updates the server applies before it answers are counted
// once (the reply's applied sequence retires their in-flight copy).
TEST(UncachedReadTest, WaitsForTheBoundAndCountsOwnUpdatesOnce) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 2});
  Client& a = cluster.client(0);
  Client& b = cluster.client(1);
  for (Client* c : {&a, &b}) ASSERT_TRUE(c->CreateTable(Dense(1, ValueType::kFloat32, 8, 1)).ok());
  ASSERT_TRUE(b.Inc<float>(1, 3, 0, 2.0f).ok());
  ASSERT_TRUE(a.Clock(0).ok());
  const std::vector<RowId> rows = {3, 4};
  std::vector<float> out(2, -1.0f);
  auto ticket = a.StartUncachedRead<float>(0, 1, rows, out);  // needs clock 1: b is at 0
  ASSERT_TRUE(ticket.ok());
  ASSERT_TRUE(a.Inc<float>(1, 3, 0, 5.0f).ok());
  ASSERT_TRUE(a.Inc<float>(1, 4, 0, 1.0f).ok());
  ASSERT_TRUE(a.Clock(0).ok());  // the batch goes out while the read is parked
  ASSERT_TRUE(b.Clock(0).ok());
  ASSERT_TRUE(a.WaitUncachedRead(*ticket).ok());
  EXPECT_EQ(out, (std::vector<float>{7.0f, 1.0f}));
}

TEST(UncachedReadTest, RefusesBadCallsBeforeReadingAnything) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Dense(1, ValueType::kFloat32, 8, 3)).ok());
  TableSpec sparse = Dense(2, ValueType::kFloat32, 8, 100);
  sparse.sparse = true;
  ASSERT_TRUE(c.CreateTable(sparse).ok());
  const std::vector<RowId> two = {1, 2};
  std::vector<float> small(5), out(6), sparse_out(200);
  std::vector<double> wrong(6);
  EXPECT_EQ(c.StartUncachedRead<float>(0, 1, two, small).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.StartUncachedRead<float>(0, 1, std::vector<RowId>{1, 8}, out).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(c.StartUncachedRead<double>(0, 1, two, wrong).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.StartUncachedRead<float>(0, 7, two, out).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.StartUncachedRead<float>(1, 1, two, out).status().code(),
            StatusCode::kInvalidArgument);  // no thread 1
  EXPECT_EQ(c.StartUncachedRead<float>(0, 2, two, sparse_out).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.stats().get_requests, 0u);
  EXPECT_EQ(c.WaitUncachedRead(ReadTicket{12345}).code(), StatusCode::kInvalidArgument);

  auto empty = c.StartUncachedRead<float>(0, 1, std::vector<RowId>{}, std::span<float>());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(c.WaitUncachedRead(*empty).ok());
  auto ticket = c.StartUncachedRead<float>(0, 1, two, out);
  ASSERT_TRUE(ticket.ok());
  EXPECT_TRUE(c.WaitUncachedRead(*ticket).ok());
  EXPECT_EQ(c.WaitUncachedRead(*ticket).code(), StatusCode::kInvalidArgument);  // waited already
}

// A read that times out is abandoned: its late reply is dropped, its buffer left alone, and the
// client goes on reading.
TEST(UncachedReadTest, AnAbandonedReadNoLongerWritesItsBuffer) {
  InProcessCluster cluster(
      {.num_servers = 1, .num_workers = 2, .client_timeout = std::chrono::milliseconds(3000)});
  Client& a = cluster.client(0);
  Client& b = cluster.client(1);
  for (Client* c : {&a, &b}) ASSERT_TRUE(c->CreateTable(Dense(1, ValueType::kFloat32, 8, 1)).ok());
  ASSERT_TRUE(a.Clock(0).ok());
  const std::vector<RowId> rows = {5};
  std::vector<float> abandoned(1, -1.0f);
  auto ticket = a.StartUncachedRead<float>(0, 1, rows, abandoned);  // b never reaches clock 1
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(a.WaitUncachedRead(*ticket).code(), StatusCode::kUnavailable);
  ASSERT_TRUE(b.Inc<float>(1, 5, 0, 3.0f).ok());
  ASSERT_TRUE(b.Clock(0).ok());
  // Answered after the abandoned request (parked together, answered in order on one
  // connection), so by now the abandoned reply has come and gone.
  std::vector<float> fresh(1, -1.0f);
  ASSERT_TRUE(ReadUncached(a, 1, rows, &fresh).ok());
  EXPECT_EQ(fresh[0], 3.0f);
  EXPECT_EQ(abandoned[0], -1.0f);
}

}  // namespace
}  // namespace tessera
