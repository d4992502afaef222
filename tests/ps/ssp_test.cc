// The SSP contract: a worker at clock c reading a table with staleness s sees every update made
// before clock c - s by every worker, never waits when that already holds, and re-reads of rows
// it holds are served by server push without new requests.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <random>
#include <thread>

#include "in_process_cluster.h"

namespace tessera {
namespace {

using testing::InProcessCluster;

constexpr TableId kTable = 1;

TableSpec CounterTable(uint64_t rows, uint32_t staleness) {
  return testing::TestTable(kTable, "counters", ValueType::kInt64, rows, 2, staleness);
}

struct SspCase {
  uint32_t staleness;
  uint32_t seed;
  SendPolicy policy = SendPolicy::kOff;  // managed communication of clients and servers
  bool batched = false;  // each clock reads all rows with one GetRows instead of a Get each
};

class SspPropertyTest : public ::testing::TestWithParam<SspCase> {};

// Worker w adds 1 to row w, column 0, once per clock, with random delays between steps. A read of
// row v at clock c therefore tells how many of v's clocks are visible: it must be at least c - s
// (the bound), exactly c for the reader's own row (read-my-writes), and never more than v has run.
TEST_P(SspPropertyTest, EveryReadSeesAllUpdatesOlderThanTheBound) {
  const auto [staleness, seed, policy, batched] = GetParam();
  constexpr int kWorkers = 3;
  constexpr int kClocks = 12;
  CommOptions comm;
  comm.policy = policy;
  comm.bytes_per_second = 5e6;
  InProcessCluster cluster(
      {.num_servers = 2, .num_workers = kWorkers, .client_comm = comm, .server_comm = comm});
  std::array<std::atomic<int64_t>, kWorkers> clocks_done{};
  std::vector<std::thread> threads;
  std::atomic<int> violations{0};
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(seed * 31 + w);
      std::uniform_int_distribution<int> delay_us(0, 400);
      Client& c = cluster.client(w);
      ASSERT_TRUE(c.CreateTable(CounterTable(kWorkers, staleness)).ok());
      for (int clock = 0; clock < kClocks; ++clock) {
        std::vector<int64_t> all(2 * kWorkers);
        if (batched) {
          std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
          // Own row in the middle: the batch mixes cache hits, pushes and requests.
          std::vector<RowId> ids;
          for (int v = 0; v < kWorkers; ++v) ids.push_back(static_cast<RowId>((v + w) % kWorkers));
          std::vector<int64_t> got(2 * kWorkers);
          ASSERT_TRUE(c.GetRows<int64_t>(0, kTable, ids, got).ok());
          for (int k = 0; k < kWorkers; ++k) all[2 * ids[k]] = got[2 * k];
        }
        for (int v = 0; v < kWorkers; ++v) {
          int64_t seen = all[2 * v];
          if (!batched) {
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
            std::vector<int64_t> row;
            ASSERT_TRUE(c.Get<int64_t>(0, kTable, v, &row).ok());
            seen = row[0];
          }
          int64_t lower = std::max<int64_t>(0, clock - static_cast<int64_t>(staleness));
          if (v == w) {
            EXPECT_EQ(seen, clock) << "own row, worker " << w;
          } else {
            // Loaded after the read: v may only have advanced since, never gone back.
            int64_t v_done = clocks_done[v].load();
            EXPECT_GE(seen, lower)
                << "worker " << w << " at clock " << clock << " read worker " << v;
            EXPECT_LE(seen, v_done + 1) << "read an update worker " << v << " had not made yet";
            if (seen < lower) ++violations;
          }
        }
        ASSERT_TRUE(c.Inc<int64_t>(kTable, w, 0, 1).ok());
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
        ASSERT_TRUE(c.Clock(0).ok());
        clocks_done[w] = clock + 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Staleness, SspPropertyTest,
    ::testing::Values(SspCase{0, 1}, SspCase{0, 2}, SspCase{1, 1}, SspCase{1, 2}, SspCase{1, 3},
                      SspCase{3, 1}, SspCase{3, 2}, SspCase{3, 3},
                      // The bound holds under every managed-communication policy.
                      SspCase{0, 4, SendPolicy::kFifo}, SspCase{1, 4, SendPolicy::kFifo},
                      SspCase{3, 4, SendPolicy::kFifo}, SspCase{0, 5, SendPolicy::kRandom},
                      SspCase{1, 5, SendPolicy::kRandom}, SspCase{3, 5, SendPolicy::kRandom},
                      SspCase{0, 6, SendPolicy::kRelativeMagnitude},
                      SspCase{1, 6, SendPolicy::kRelativeMagnitude},
                      SspCase{3, 6, SendPolicy::kRelativeMagnitude},
                      // Batched reads (GetRows) keep the same contract.
                      SspCase{0, 7, SendPolicy::kOff, true}, SspCase{1, 7, SendPolicy::kOff, true},
                      SspCase{3, 7, SendPolicy::kOff, true}),
    [](const auto& info) {
      std::string policy(SendPolicyName(info.param.policy));
      std::replace(policy.begin(), policy.end(), '-', '_');
      return "s" + std::to_string(info.param.staleness) + "_seed" +
             std::to_string(info.param.seed) + "_" + policy +
             (info.param.batched ? "_batched" : "");
    });

// With staleness s a worker may run s clocks ahead of a stalled one without waiting; its read
// one clock further must wait until the stalled worker clocks.
TEST(SspBoundTest, RunsAheadWithoutWaitingThenWaitsAtTheBound) {
  for (uint32_t s : {0u, 1u, 3u}) {
    SCOPED_TRACE("staleness " + std::to_string(s));
    InProcessCluster cluster({.num_servers = 1, .num_workers = 2});
    Client& fast = cluster.client(0);
    Client& slow = cluster.client(1);
    ASSERT_TRUE(fast.CreateTable(CounterTable(2, s)).ok());
    ASSERT_TRUE(slow.CreateTable(CounterTable(2, s)).ok());

    // The slow worker never clocks during this phase, so reads at clocks 0..s must not wait.
    auto ahead = std::async(std::launch::async, [&] {
      std::vector<int64_t> row;
      for (uint32_t clock = 0; clock <= s; ++clock) {
        EXPECT_TRUE(fast.Get<int64_t>(0, kTable, 1, &row).ok());
        EXPECT_TRUE(fast.Inc<int64_t>(kTable, 0, 0, 1).ok());
        EXPECT_TRUE(fast.Clock(0).ok());
      }
    });
    // A generous bound only to turn a would-be deadlock into a failure.
    ASSERT_EQ(ahead.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "a read waited although the staleness bound held";
    ahead.get();
    EXPECT_EQ(fast.stats().stale_waits, 0u);
    EXPECT_EQ(fast.stats().cold_misses, 1u);  // the first read fetched the row once
    EXPECT_EQ(cluster.server(0).stats().parked_gets, 0u);

    // Clock s+1: the bound needs the slow worker's clock 0.
    std::atomic<bool> slow_clocked{false};
    auto blocked = std::async(std::launch::async, [&] {
      std::vector<int64_t> row;
      EXPECT_TRUE(fast.Get<int64_t>(0, kTable, 1, &row).ok());
      EXPECT_TRUE(slow_clocked.load()) << "read returned before the bound could hold";
      EXPECT_EQ(row[0], 5);
    });
    // Release the slow worker only once the fast read is blocked (bounded polling of a gauge).
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (fast.stats().blocked_reads == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    ASSERT_EQ(fast.stats().blocked_reads, 1u);
    ASSERT_TRUE(slow.Inc<int64_t>(kTable, 1, 0, 5).ok());
    slow_clocked = true;
    ASSERT_TRUE(slow.Clock(0).ok());
    blocked.get();
    EXPECT_EQ(fast.stats().stale_waits, 1u);
    EXPECT_EQ(fast.stats().blocked_reads, 0u);
  }
}

// After a barrier both workers passed, a worker the server has not heard from since is on its way,
// not stopped there: a read that waits for its clock is parked until it comes, not failed as a
// deadlock because the server's last news of that worker is "waiting at the barrier".
TEST(SspBoundTest, AReadWaitsForAWorkerStillSilentAfterABarrierBothPassed) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 2});
  Client& reader = cluster.client(0);
  Client& late = cluster.client(1);
  ASSERT_TRUE(reader.CreateTable(CounterTable(2, 0)).ok());
  ASSERT_TRUE(late.CreateTable(CounterTable(2, 0)).ok());
  auto late_barrier = std::async(std::launch::async, [&] { return late.Barrier(); });
  ASSERT_TRUE(reader.Barrier().ok());
  ASSERT_TRUE(late_barrier.get().ok());
  // From here `late` sends nothing until the read waits at the server.
  ASSERT_TRUE(reader.Inc<int64_t>(kTable, 0, 0, 1).ok());
  ASSERT_TRUE(reader.Clock(0).ok());
  auto read = std::async(std::launch::async, [&] {
    std::vector<int64_t> row;
    Status s = reader.Get<int64_t>(0, kTable, 1, &row);
    return std::make_pair(s, row.empty() ? int64_t{-1} : row[0]);
  });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (cluster.server(0).stats().parked_gets == 0 &&
         read.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_EQ(cluster.server(0).stats().parked_gets, 1u) << "the read was not left waiting";
  ASSERT_TRUE(late.Inc<int64_t>(kTable, 1, 0, 7).ok());
  ASSERT_TRUE(late.Clock(0).ok());
  const auto [status, value] = read.get();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(value, 7);
}

// Rows a client has read are pushed to it when they change: after the first read, every later
// read is answered without a request to the server, and still sees the other worker's updates.
TEST(ServerPushTest, RereadAfterOtherWorkersUpdatesNeedsNoRequest) {
  constexpr int kRounds = 20;
  InProcessCluster cluster({.num_servers = 2, .num_workers = 2});
  Client& reader = cluster.client(0);
  Client& writer = cluster.client(1);
  ASSERT_TRUE(reader.CreateTable(CounterTable(8, 0)).ok());
  ASSERT_TRUE(writer.CreateTable(CounterTable(8, 0)).ok());
  std::vector<int64_t> row;
  for (RowId r = 0; r < 8; ++r) ASSERT_TRUE(reader.Get<int64_t>(0, kTable, r, &row).ok());
  const uint64_t requests_after_first_read = reader.stats().get_requests;
  EXPECT_EQ(requests_after_first_read, 8u);

  auto writing = std::async(std::launch::async, [&] {
    for (int round = 0; round < kRounds; ++round) {
      EXPECT_TRUE(writer.Inc<int64_t>(kTable, round % 8, 1, 10).ok());
      EXPECT_TRUE(writer.Clock(0).ok());
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(reader.Clock(0).ok());
    // Clock round+1 with staleness 0: the writer's updates of clocks <= round must be visible.
    for (RowId r = 0; r < 8; ++r) {
      ASSERT_TRUE(reader.Get<int64_t>(0, kTable, r, &row).ok());
      int64_t expected_min =
          10 * ((round + 1) / 8 + (static_cast<int>(r) < (round + 1) % 8 ? 1 : 0));
      ASSERT_GE(row[1], expected_min) << "round " << round << " row " << r;
    }
  }
  writing.get();
  EXPECT_EQ(reader.stats().get_requests, requests_after_first_read);
  EXPECT_GT(reader.stats().pushes, 0u);
  EXPECT_GT(reader.stats().rows_received, 8u);  // changed rows came by push
}

}  // namespace
}  // namespace tessera
