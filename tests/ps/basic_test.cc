#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <numeric>
#include <thread>

#include "in_process_cluster.h"
#include "tessera/transport/message.h"

namespace tessera {
namespace {

using testing::ClusterOptions;
using testing::InProcessCluster;

TableSpec DenseFloat(TableId id, uint64_t rows, uint32_t width, uint32_t staleness = 0) {
  return testing::TestTable(id, "t" + std::to_string(id), ValueType::kFloat32, rows, width,
                            staleness);
}

// Runs fn(worker) on one thread per worker and waits for all.
template <typename F>
void OnEachWorker(InProcessCluster& cluster, F fn) {
  std::vector<std::thread> threads;
  for (int w = 0; w < cluster.num_workers(); ++w) threads.emplace_back([&, w] { fn(w); });
  for (auto& t : threads) t.join();
}

TEST(ClientServerTest, IncThenReadOwnWritesBeforeAndAfterClock) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(DenseFloat(1, 100, 4)).ok());
  std::vector<float> row;
  ASSERT_TRUE(c.Get<float>(0, 1, 7, &row).ok());
  EXPECT_EQ(row, std::vector<float>(4, 0.0f));
  ASSERT_TRUE(c.Inc<float>(1, 7, 2, 1.5f).ok());
  ASSERT_TRUE(c.Get<float>(0, 1, 7, &row).ok());
  EXPECT_EQ(row[2], 1.5f);  // read-my-writes from the update log
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Inc<float>(1, 7, 2, 1.0f).ok());
  ASSERT_TRUE(c.Get<float>(0, 1, 7, &row).ok());
  EXPECT_EQ(row[2], 2.5f);
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Get<float>(0, 1, 7, &row).ok());
  EXPECT_EQ(row[2], 2.5f);  // nothing counted twice once the server applied the batches
}

TEST(ClientServerTest, AllValueTypesAndSparseRows) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1});
  Client& c = cluster.client(0);
  TableSpec d = DenseFloat(1, 10, 3);
  d.value_type = ValueType::kFloat64;
  TableSpec i32 = DenseFloat(2, 10, 3);
  i32.value_type = ValueType::kInt32;
  TableSpec sparse = DenseFloat(3, 10, 1000);
  sparse.value_type = ValueType::kInt64;
  sparse.sparse = true;
  ASSERT_TRUE(c.CreateTable(d).ok());
  ASSERT_TRUE(c.CreateTable(i32).ok());
  ASSERT_TRUE(c.CreateTable(sparse).ok());
  ASSERT_TRUE(c.Inc<double>(1, 0, 1, 0.25).ok());
  ASSERT_TRUE(c.Inc<int32_t>(2, 0, 0, -3).ok());
  ASSERT_TRUE(c.Inc<int64_t>(3, 5, 999, 4).ok());
  ASSERT_TRUE(c.Inc<int64_t>(3, 5, 10, 2).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Inc<int64_t>(3, 5, 10, -2).ok());  // back to zero: the cell disappears
  ASSERT_TRUE(c.Clock(0).ok());
  std::vector<double> dv;
  std::vector<int32_t> iv;
  std::vector<std::pair<uint32_t, int64_t>> sv;
  ASSERT_TRUE(c.Get<double>(0, 1, 0, &dv).ok());
  ASSERT_TRUE(c.Get<int32_t>(0, 2, 0, &iv).ok());
  ASSERT_TRUE(c.GetSparse<int64_t>(0, 3, 5, &sv).ok());
  EXPECT_EQ(dv, (std::vector<double>{0, 0.25, 0}));
  EXPECT_EQ(iv, (std::vector<int32_t>{-3, 0, 0}));
  EXPECT_EQ(sv, (std::vector<std::pair<uint32_t, int64_t>>{{999, 4}}));
}

TEST(ClientServerTest, IncRowAddsAWholeRow) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 2});
  OnEachWorker(cluster, [&](int w) {
    Client& c = cluster.client(w);
    ASSERT_TRUE(c.CreateTable(DenseFloat(1, 10, 3)).ok());
    std::vector<float> delta = {1, 2, static_cast<float>(w)};
    ASSERT_TRUE(c.IncRow<float>(1, 4, delta).ok());
    ASSERT_TRUE(c.Clock(0).ok());
    std::vector<float> row;
    ASSERT_TRUE(c.Get<float>(0, 1, 4, &row).ok());
    EXPECT_EQ(row, (std::vector<float>{2, 4, 1}));
  });
}

// GetRows returns what Get returns for each row (own writes included, rows of both servers, in
// any order and repeated), and refuses bad calls before reading anything.
TEST(ClientServerTest, GetRowsMatchesGetAndRefusesBadCalls) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(DenseFloat(1, 64, 3)).ok());
  for (RowId r = 0; r < 64; r += 3) ASSERT_TRUE(c.Inc<float>(1, r, 1, float(r)).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Inc<float>(1, 6, 2, 0.5f).ok());  // not sent yet: read-my-writes
  std::vector<RowId> ids = {9, 0, 63, 6, 9, 17, 33, 6};
  std::vector<float> got(ids.size() * 3, -1.0f);
  ASSERT_TRUE(c.GetRows<float>(0, 1, ids, got).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<float> row;
    ASSERT_TRUE(c.Get<float>(0, 1, ids[i], &row).ok());
    EXPECT_EQ(std::vector<float>(got.begin() + 3 * i, got.begin() + 3 * i + 3), row) << ids[i];
  }
  EXPECT_EQ(got[3 * 3 + 1], 6.0f);
  EXPECT_EQ(got[3 * 3 + 2], 0.5f);
  ClientStats stats = c.stats();
  EXPECT_EQ(stats.reads, 2 * ids.size());
  EXPECT_EQ(stats.cold_misses + stats.cache_hits + stats.stale_waits, 2 * ids.size());

  std::vector<float> small(5);
  EXPECT_EQ(c.GetRows<float>(0, 1, ids, small).code(), StatusCode::kInvalidArgument);
  std::vector<RowId> bad = {1, 64};
  std::vector<float> out(6);
  EXPECT_EQ(c.GetRows<float>(0, 1, bad, out).code(), StatusCode::kOutOfRange);
  std::vector<double> wrong(6);
  EXPECT_EQ(c.GetRows<double>(0, 1, std::vector<RowId>{1, 2}, wrong).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.GetRows<float>(0, 7, std::vector<RowId>{1}, std::span<float>()).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(c.GetRows<float>(3, 1, std::vector<RowId>{1, 2}, out).code(),
            StatusCode::kInvalidArgument);  // no thread 3
  TableSpec sparse = DenseFloat(2, 8, 100);
  sparse.sparse = true;
  ASSERT_TRUE(c.CreateTable(sparse).ok());
  std::vector<float> sparse_out(100);
  EXPECT_EQ(c.GetRows<float>(0, 2, std::vector<RowId>{1}, sparse_out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.stats().reads, 2 * ids.size());  // nothing read by the refused calls
}

// Read-my-writes while another thread of the process flushes: thread 0 adds to rows it has
// never read and reads them back at once, batch after batch, while thread 1's clocks send the
// update log. A read that misses a row's delta (taken out of the log by the flush, its batch
// not sent yet when the read's request overtakes it) sees 0.
TEST(ClientServerTest, ReadsSeeOwnWritesWhileAnotherThreadFlushes) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  constexpr RowId kRows = 16 * 1024;  // 10-100x slower: what the sanitizers check still runs
#else
  constexpr RowId kRows = 512 * 1024;
#endif
  constexpr RowId kBatch = 256;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .threads_per_worker = 2});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(DenseFloat(1, kRows, 4, /*staleness=*/1000000)).ok());
  std::atomic<bool> done{false};
  std::thread flusher([&] {
    // Follows thread 0 one clock behind, so every flush happens here, concurrent with its reads.
    while (!done.load()) {
      if (c.clock(1) + 1 < c.clock(0)) {
        ASSERT_TRUE(c.Clock(1).ok());
      } else {
        std::this_thread::yield();
      }
    }
  });
  uint64_t missed = 0;
  std::vector<RowId> ids(kBatch);
  std::vector<float> got(kBatch * 4);
  for (RowId base = 0; base < kRows; base += kBatch) {
    std::iota(ids.begin(), ids.end(), base);
    for (RowId r : ids) ASSERT_TRUE(c.Inc<float>(1, r, 0, 1.0f).ok());
    ASSERT_TRUE(c.GetRows<float>(0, 1, ids, got).ok());
    for (size_t i = 0; i < kBatch; ++i) missed += got[4 * i] != 1.0f;
    ASSERT_TRUE(c.Clock(0).ok());
  }
  done = true;
  flusher.join();
  EXPECT_EQ(missed, 0u) << "rows read without their own thread's write";
}

// IncRows adds what IncRow of each row adds (rows of both servers, repeated, read back before
// and after the clock), and refuses a bad call whole: nothing of it is added.
TEST(ClientServerTest, IncRowsAddsAsIncRowAndRefusesBadCallsWhole) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(DenseFloat(1, 64, 2)).ok());
  ASSERT_TRUE(c.CreateTable(DenseFloat(2, 64, 2)).ok());
  const std::vector<RowId> rows = {5, 40, 5, 63, 0, 17};
  std::vector<float> deltas;
  for (size_t i = 0; i < rows.size(); ++i) {
    deltas.push_back(float(i + 1));
    deltas.push_back(0.5f * float(i));
  }
  ASSERT_TRUE(c.IncRows<float>(1, rows, deltas).ok());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(c.IncRow<float>(2, rows[i], std::span<const float>(deltas).subspan(2 * i, 2)).ok());
  }
  std::vector<float> by_rows(rows.size() * 2), by_row(rows.size() * 2);
  ASSERT_TRUE(c.GetRows<float>(0, 1, rows, by_rows).ok());
  ASSERT_TRUE(c.GetRows<float>(0, 2, rows, by_row).ok());
  EXPECT_EQ(by_rows, by_row);
  EXPECT_EQ(by_rows[0], 1.0f + 3.0f);  // row 5, twice
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.GetRows<float>(0, 1, rows, by_rows).ok());
  ASSERT_TRUE(c.GetRows<float>(0, 2, rows, by_row).ok());
  EXPECT_EQ(by_rows, by_row);
  EXPECT_EQ(by_rows[0], 4.0f);

  std::vector<float> two(4, 1.0f);
  EXPECT_EQ(c.IncRows<float>(1, std::vector<RowId>{1, 64}, two).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c.IncRows<float>(1, std::vector<RowId>{1}, two).code(), StatusCode::kInvalidArgument);
  std::vector<double> wrong(4, 1.0);
  EXPECT_EQ(c.IncRows<double>(1, std::vector<RowId>{1, 2}, wrong).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.IncRows<float>(9, std::vector<RowId>{1, 2}, two).code(), StatusCode::kNotFound);
  TableSpec sparse = DenseFloat(3, 8, 2);
  sparse.sparse = true;
  ASSERT_TRUE(c.CreateTable(sparse).ok());
  EXPECT_EQ(c.IncRows<float>(3, std::vector<RowId>{1, 2}, two).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> row;
  ASSERT_TRUE(c.Get<float>(0, 1, 1, &row).ok());
  EXPECT_EQ(row, std::vector<float>(2, 0.0f)) << "a refused call added its good row";
  EXPECT_EQ(c.stats().update_rows_sent, 2 * 5u);  // 5 distinct rows per table, one clock
}

// Writers faster than their server: each keeps at most 32 update batches unacknowledged per
// server, waiting at clock boundaries for the server to catch up, and nothing is lost or counted
// twice.
TEST(ClientServerTest, FlowControlBoundsUnacknowledgedBatchesAndLosesNothing) {
  // Many clocks, so that the writers getting 32 batches ahead does not hang on one lucky spell of
  // scheduling (under ASan 100 clocks once ended without a wait); about 30 ms.
  constexpr int kWriters = 4, kClocks = 1000, kRows = 64, kWidth = 16;
  InProcessCluster cluster({.num_servers = 1, .num_workers = kWriters});
  OnEachWorker(cluster, [&](int w) {
    Client& c = cluster.client(w);
    ASSERT_TRUE(c.CreateTable(DenseFloat(1, kRows, kWidth)).ok());
    std::vector<float> delta(kWidth, 1.0f);
    for (int clock = 0; clock < kClocks; ++clock) {
      for (RowId r = 0; r < kRows; ++r) ASSERT_TRUE(c.IncRow<float>(1, r, delta).ok());
      ASSERT_TRUE(c.Clock(0).ok());
    }
  });
  uint64_t waits = 0;
  for (int w = 0; w < kWriters; ++w) {
    ClientStats stats = cluster.client(w).stats();
    EXPECT_LE(stats.unacked_batches_max, 32u) << "worker " << w;
    EXPECT_GE(stats.unacked_batches_max, 1u);
    waits += stats.flow_control_waits;
  }
  EXPECT_GT(waits, 0u) << "the writers never outran the server: the window was not tested";
  // Every worker has finished kClocks clocks: a staleness-0 read sees every update exactly once.
  std::vector<float> row;
  for (RowId r = 0; r < kRows; r += 37) {
    ASSERT_TRUE(cluster.client(0).Get<float>(0, 1, r, &row).ok());
    EXPECT_EQ(row, std::vector<float>(kWidth, float(kWriters * kClocks))) << r;
  }
}

class TransportTest : public ::testing::TestWithParam<bool> {};

// Several nodes in one process, over inproc:// and over tcp on loopback (ephemeral ports).
TEST_P(TransportTest, BulkSynchronousReadsSeeEveryEarlierClockExactly) {
  constexpr int kClocks = 5;
  constexpr uint64_t kRows = 50;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 3, .tcp = GetParam()});
  OnEachWorker(cluster, [&](int w) {
    Client& c = cluster.client(w);
    TableSpec spec = DenseFloat(1, kRows, 2);
    spec.value_type = ValueType::kInt64;
    ASSERT_TRUE(c.CreateTable(spec).ok());
    for (int clock = 0; clock < kClocks; ++clock) {
      ASSERT_TRUE(c.Barrier().ok());
      for (RowId r = 0; r < kRows; ++r) {
        std::vector<int64_t> row;
        ASSERT_TRUE(c.Get<int64_t>(0, 1, r, &row).ok());
        // Every worker adds (r + 1) to column 0 once per clock.
        ASSERT_EQ(row[0], int64_t(clock) * 3 * int64_t(r + 1))
            << "worker " << w << " clock " << clock;
      }
      ASSERT_TRUE(c.Barrier().ok());
      for (RowId r = 0; r < kRows; ++r) ASSERT_TRUE(c.Inc<int64_t>(1, r, 0, int64_t(r + 1)).ok());
      ASSERT_TRUE(c.Clock(0).ok());
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "tcp" : "inproc"; });

// A worker may exit as soon as Leave() returns, closing its connections; whatever it sent that a
// server had not read yet could then be lost (a TCP reset drops it), and with it the worker's
// last clocks: the other workers' reads would wait for them forever. So Leave() returns only once
// every server has acknowledged the Leave, i.e. has applied everything sent before it.
TEST_P(TransportTest, LeaveReturnsOnlyAfterEveryServerAppliedEverything) {
  InProcessCluster cluster({.num_servers = 2, .num_workers = 1, .tcp = GetParam()});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(DenseFloat(1, 64, 4)).ok());
  std::vector<float> delta(4, 1.0f);
  for (int clock = 0; clock < 20; ++clock) {
    for (RowId r = 0; r < 64; ++r) ASSERT_TRUE(c.IncRow<float>(1, r, delta).ok());
    ASSERT_TRUE(c.Clock(0).ok());
  }
  ASSERT_TRUE(c.Leave().ok());
  for (int s = 0; s < 2; ++s) {
    ServerStats stats = cluster.server(s).stats();
    // 20 clock batches and the one Leave flushes, then the Leave itself (the clock of a job
    // without workers left is the end of time).
    EXPECT_EQ(stats.update_batches, 21u) << "server " << s;
    EXPECT_EQ(stats.clock, std::numeric_limits<int64_t>::max()) << "server " << s;
  }
}

// The coordinator's end-of-job Leave to the servers is the last thing it sends before its owner
// closes it; a close that dropped queued messages left a server waiting forever. Here the one
// "server" is a raw peer that does not read until the coordinator is gone, with megabytes queued
// ahead of the Leave (membership answers repeating its endpoint of almost 1 MiB, the most a
// coordinator accepts in a message), so the Leave is still in
// the coordinator's queue when it closes.
TEST(CoordinatorTest, EndOfJobReachesAServerWithABacklog) {
  zmq::context_t context;
  CoordinatorOptions options;
  options.num_servers = 1;
  options.num_workers = 1;
  auto coordinator = std::make_unique<Coordinator>(options, context);
  ASSERT_TRUE(coordinator->Start().ok());
  zmq::socket_t peer(context, zmq::socket_type::dealer);
  peer.set(zmq::sockopt::linger, 0);
  peer.set(zmq::sockopt::rcvbuf, 4096);  // a small window: the backlog stays on the sender
  peer.connect(coordinator->endpoint());
  auto send = [&](auto fill) {
    OutgoingMessage msg(0, 1);
    fill(msg.envelope().getBody());
    peer.send(msg.ToFrame(), zmq::send_flags::none);
  };
  send([](proto::Envelope::Body::Builder b) {
    auto r = b.initRegister();
    r.setRole(proto::Role::SERVER);
    r.setEndpoint(std::string((1 << 20) - 4096, 'x'));
  });
  // The same peer registers as the job's worker, again and again: each answer carries the
  // endpoint. Then it leaves, which ends the job.
  for (int i = 0; i < 24; ++i) {
    send([](proto::Envelope::Body::Builder b) { b.initRegister().setRole(proto::Role::WORKER); });
  }
  send([](proto::Envelope::Body::Builder b) { b.initLeave().setRank(0); });
  coordinator->WaitUntilDone();
  coordinator.reset();
  bool end_of_job = false;
  zmq::pollitem_t item{peer.handle(), 0, ZMQ_POLLIN, 0};
  while (!end_of_job && zmq::poll(&item, 1, std::chrono::seconds(10)) > 0) {
    zmq::message_t frame;
    (void)peer.recv(frame, zmq::recv_flags::none);
    auto msg = IncomingMessage::Parse(std::move(frame));
    ASSERT_TRUE(msg.ok()) << msg.status().ToString();
    // The Leave's acknowledgement echoes the request id; the end of job has none.
    auto env = (*msg)->envelope();
    end_of_job = env.getBody().isLeave() && env.getRequestId() == 0;
  }
  EXPECT_TRUE(end_of_job) << "the end-of-job message was lost";
}

}  // namespace
}  // namespace tessera
