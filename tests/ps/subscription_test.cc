// The server's subscriptions of rows nobody has written yet (kept by blocks of consecutive rows):
// a row's first write is pushed to exactly the workers that read it and did not unsubscribe,
// across block boundaries and with other rows of the same block still read.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "in_process_cluster.h"
#include "raw_peer.h"
#include "tessera/transport/message.h"

namespace tessera {
namespace {

using testing::InProcessCluster;
using testing::RawPeer;

constexpr TableId kTable = 1;

TableSpec Counters() { return testing::TestTable(kTable, "counters", ValueType::kInt64, 256, 2); }

class UnwrittenSubscriptionTest : public ::testing::Test {
 protected:
  // Worker 0 is a real client (the writer), worker 1 is played by the raw peer (the reader).
  UnwrittenSubscriptionTest()
      : cluster_({.num_servers = 1, .num_workers = 2, .num_clients = 1}),
        peer_(cluster_, cluster_.server(0).endpoint()) {}

  void SetUp() override {
    ASSERT_TRUE(cluster_.client(0).CreateTable(Counters()).ok());
    peer_.Register(1, "test-secret");
    ASSERT_NE(peer_.Receive(), nullptr);
  }

  // The peer reads `rows` in one request (subscribing to them) and gets them all, zeros.
  void PeerReads(const std::vector<RowId>& rows) {
    OutgoingMessage msg(1, 21);
    auto get = msg.envelope().getBody().initGet();
    get.setTable(kTable);
    auto list = get.initRows(static_cast<unsigned>(rows.size()));
    for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
    peer_.Send(msg);
    auto reply = peer_.Receive();
    ASSERT_NE(reply, nullptr);
    ASSERT_TRUE(reply->envelope().getBody().isRows());
    auto got = testing::RowsOf(reply->envelope().getBody().getRows(), Counters());
    ASSERT_EQ(got.size(), rows.size());
    for (const auto& [row, cells] : got) EXPECT_EQ(cells[0], 0.0) << row;
  }

  void PeerUnsubscribes(const std::vector<RowId>& rows) {
    auto msg = testing::UnsubscribeMessage(1, kTable, rows);
    peer_.Send(msg);
  }

  // Worker 0 writes `rows` (their first write) and both workers finish clock 0: the rows pushed
  // to the peer with that clock.
  std::set<RowId> PushedAfterWriting(const std::vector<RowId>& rows) {
    for (RowId r : rows) EXPECT_TRUE(cluster_.client(0).Inc<int64_t>(kTable, r, 0, 5).ok());
    EXPECT_TRUE(cluster_.client(0).Clock(0).ok());
    OutgoingMessage tick(1, 0);
    tick.envelope().getBody().initClock().setClock(1);
    peer_.Send(tick);
    std::set<RowId> pushed;
    while (true) {
      auto msg = peer_.Receive();
      EXPECT_NE(msg, nullptr) << "no push";
      if (msg == nullptr) break;
      if (!msg->envelope().getBody().isRows()) continue;
      for (const auto& [row, cells] :
           testing::RowsOf(msg->envelope().getBody().getRows(), Counters())) {
        EXPECT_EQ(cells[0], 5.0) << row;
        pushed.insert(row);
      }
      break;  // a clock's pushes to a worker come in one message
    }
    return pushed;
  }

  InProcessCluster cluster_;
  RawPeer peer_;
};

// Rows 60-69 span two blocks (0-63, 64-127) and 130 a third; 61, 64 and 130 are unsubscribed,
// the last row the peer read in its block. Only the rows still read are pushed when first
// written, also 62-63 and 65-69, which share blocks with unsubscribed rows.
TEST_F(UnwrittenSubscriptionTest, FirstWritesArePushedToReadersStillSubscribed) {
  ASSERT_NO_FATAL_FAILURE(PeerReads({60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 130}));
  PeerUnsubscribes({61, 64, 130});
  // An unsubscription of a row never read changes nothing (and is not counted).
  PeerUnsubscribes({100, 131});
  std::set<RowId> pushed =
      PushedAfterWriting({60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 100, 130, 131});
  EXPECT_EQ(pushed, (std::set<RowId>{60, 62, 63, 65, 66, 67, 68, 69}));
  EXPECT_EQ(cluster_.server(0).stats().unsubscribed_rows, 3u);
}

// Reading a row twice subscribes it once: one unsubscription ends it.
TEST_F(UnwrittenSubscriptionTest, ReadingARowAgainSubscribesItOnce) {
  ASSERT_NO_FATAL_FAILURE(PeerReads({5, 6}));
  ASSERT_NO_FATAL_FAILURE(PeerReads({6, 7}));
  PeerUnsubscribes({6});
  std::set<RowId> pushed = PushedAfterWriting({5, 6, 7});
  EXPECT_EQ(pushed, (std::set<RowId>{5, 7}));
  EXPECT_EQ(cluster_.server(0).stats().unsubscribed_rows, 1u);
}

}  // namespace
}  // namespace tessera
