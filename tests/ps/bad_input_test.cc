// Bad input of every kind: a clear error to the sender (and in the log), the server keeps
// serving everyone else, and no update is lost or applied twice.
#include <gtest/gtest.h>

#include "in_process_cluster.h"
#include "raw_peer.h"
#include "tessera/table/wire.h"
#include "tessera/transport/message.h"

namespace tessera {
namespace {

using testing::InProcessCluster;
using testing::RawPeer;

constexpr TableId kTable = 1;

TableSpec Counters(uint64_t rows = 4) {
  return testing::TestTable(kTable, "counters", ValueType::kInt64, rows, 2);
}

// The real client of worker 0 still works: its table answers and counts are exact.
void ExpectClientStillServed(Client& c, int64_t expected) {
  std::vector<int64_t> row;
  ASSERT_TRUE(c.Get<int64_t>(0, kTable, 0, &row).ok());
  EXPECT_EQ(row[0], expected);
}

class BadInputTest : public ::testing::Test {
 protected:
  // Two worker slots: worker 0 is a real client, worker 1 is played by the raw peer.
  BadInputTest() : cluster_({.num_servers = 1, .num_workers = 2, .num_clients = 1}) {}

  void SetUp() override { ASSERT_TRUE(cluster_.client(0).CreateTable(Counters()).ok()); }

  std::string ServerEndpoint() { return cluster_.server(0).endpoint(); }
  void ExpectChangeOfRow2Pushed(RawPeer& peer, int64_t delta);
  InProcessCluster cluster_;
};

std::unique_ptr<OutgoingMessage> GetRequest(uint32_t rank, TableId table, RowId row,
                                            int64_t min_clock = 0) {
  auto msg = std::make_unique<OutgoingMessage>(rank, 11);
  auto get = msg->envelope().getBody().initGet();
  get.setTable(table);
  get.initRows(1).set(0, row);
  get.setMinClock(min_clock);
  return msg;
}

// An update batch adding `delta` to column 0 of each of `rows`.
std::unique_ptr<OutgoingMessage> UpdateBatch(uint32_t rank, uint64_t seq, std::vector<RowId> rows,
                                             int64_t delta) {
  auto msg = std::make_unique<OutgoingMessage>(rank, 0);
  auto update = msg->envelope().getBody().initUpdate();
  update.setSeq(seq);
  auto list = update.initRows(static_cast<unsigned>(rows.size()));
  for (unsigned i = 0; i < rows.size(); ++i) {
    list[i].setTable(kTable);
    list[i].setRow(rows[i]);
    auto values = list[i].initValues().initI64(2);
    values.set(0, delta);
  }
  return msg;
}

// Reads row `row` through the raw peer; replies on one connection come in order, so the value
// reflects every update batch the peer sent before.
int64_t RawRead(RawPeer& peer, uint32_t rank, RowId row) {
  auto get = GetRequest(rank, kTable, row);
  peer.Send(get);
  auto reply = peer.Receive();
  EXPECT_NE(reply, nullptr);
  if (reply == nullptr || !reply->envelope().getBody().isRows()) {
    ADD_FAILURE() << "expected rows";
    return -1;
  }
  auto rows = testing::RowsOf(reply->envelope().getBody().getRows(), Counters());
  if (rows.size() != 1 || rows[0].first != row) {
    ADD_FAILURE() << "expected row " << row;
    return -1;
  }
  return static_cast<int64_t>(rows[0].second[0]);
}

TEST_F(BadInputTest, GarbageFramesAreRejectedAndTheServerKeepsServing) {
  RawPeer peer(cluster_, ServerEndpoint());
  peer.SendBytes("hello");
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::MALFORMED);
  peer.SendBytes(std::string(64, '\xff'));
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::MALFORMED);
  EXPECT_GE(cluster_.server(0).stats().rejected_messages, 2u);
  ASSERT_TRUE(cluster_.client(0).Inc<int64_t>(kTable, 0, 0, 3).ok());
  ExpectClientStillServed(cluster_.client(0), 3);
}

TEST_F(BadInputTest, WrongProtocolVersionIsRejected) {
  RawPeer peer(cluster_, ServerEndpoint());
  OutgoingMessage msg(1, 0);
  msg.envelope().setVersion(99);
  msg.envelope().getBody().initClock().setClock(1);
  peer.Send(msg);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::VERSION_MISMATCH);
  ExpectClientStillServed(cluster_.client(0), 0);
}

TEST_F(BadInputTest, UnregisteredPeerAndWrongSecretAreRejected) {
  RawPeer peer(cluster_, ServerEndpoint());
  auto get = GetRequest(1, kTable, 0);
  peer.Send(get);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::UNAUTHENTICATED);
  peer.Register(1, "not-the-secret");
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::UNAUTHENTICATED);
  // Claiming another worker's rank from a second connection is refused too.
  RawPeer impostor(cluster_, ServerEndpoint());
  auto as_worker0 = GetRequest(0, kTable, 0);
  impostor.Send(as_worker0);
  EXPECT_EQ(impostor.ExpectError(), proto::ErrorCode::UNAUTHENTICATED);
  ExpectClientStillServed(cluster_.client(0), 0);
}

TEST_F(BadInputTest, UnknownTableAndRowOutOfRangeAnswerTheRequest) {
  RawPeer peer(cluster_, ServerEndpoint());
  peer.Register(1, "test-secret");
  ASSERT_NE(peer.Receive(), nullptr);
  auto unknown = GetRequest(1, 99, 0);
  peer.Send(unknown);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::NOT_FOUND);
  auto out_of_range = GetRequest(1, kTable, 1000);
  peer.Send(out_of_range);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::OUT_OF_RANGE);
  // A conflicting definition of an existing table.
  OutgoingMessage create(1, 12);
  TableSpec other = Counters(8);
  TableSpecToProto(other, create.envelope().getBody().initCreateTable());
  peer.Send(create);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::FAILED_PRECONDITION);
  ExpectClientStillServed(cluster_.client(0), 0);
}

// Worker 0 adds `delta` to row 2; both workers (worker 0 and the raw peer as worker 1) finish
// clock 0: the change must be pushed to the peer, which is subscribed to row 2.
void BadInputTest::ExpectChangeOfRow2Pushed(RawPeer& peer, int64_t delta) {
  ASSERT_TRUE(cluster_.client(0).Inc<int64_t>(kTable, 2, 0, delta).ok());
  ASSERT_TRUE(cluster_.client(0).Clock(0).ok());
  OutgoingMessage tick(1, 0);
  tick.envelope().getBody().initClock().setClock(1);
  peer.Send(tick);
  std::vector<std::pair<RowId, std::vector<double>>> pushed;
  while (pushed.empty()) {
    auto push = peer.Receive();
    ASSERT_NE(push, nullptr) << "row 2 was not pushed";
    if (push->envelope().getBody().isRows())
      pushed = testing::RowsOf(push->envelope().getBody().getRows(), Counters());
  }
  ASSERT_EQ(pushed.size(), 1u);
  EXPECT_EQ(pushed[0].first, 2u);
  EXPECT_EQ(pushed[0].second[0], delta);
}

// An Unsubscribe (alone or in a read) naming an unknown table or a row out of range is refused
// as a whole: the rows before the bad one stay subscribed (a later update is still pushed).
TEST_F(BadInputTest, BadUnsubscribeIsRejectedWhole) {
  RawPeer peer(cluster_, ServerEndpoint());
  peer.Register(1, "test-secret");
  ASSERT_NE(peer.Receive(), nullptr);
  ASSERT_EQ(RawRead(peer, 1, 2), 0);  // subscribes the peer to row 2
  auto unsubscribe = [&](TableId table, std::vector<RowId> rows) {
    auto msg = testing::UnsubscribeMessage(1, table, rows);
    peer.Send(msg);
  };
  unsubscribe(99, {2});
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::NOT_FOUND);
  unsubscribe(kTable, {2, 1000});
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::OUT_OF_RANGE);
  // The same list riding on a read: the read is refused too, and nothing is unsubscribed.
  auto get = GetRequest(1, kTable, 3);
  auto list = get->envelope().getBody().getGet().initUnsubscribe(2);
  list.set(0, 2);
  list.set(1, 1000);
  peer.Send(get);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::OUT_OF_RANGE);
  EXPECT_EQ(cluster_.server(0).stats().unsubscribed_rows, 0u);
  ExpectChangeOfRow2Pushed(peer, 5);
  ExpectClientStillServed(cluster_.client(0), 0);
}

// A client may drop a row and ask for it again before its unsubscription has left: both ride on
// one request. The row must stay subscribed (the client caches it again).
TEST_F(BadInputTest, ARowUnsubscribedAndReadInOneRequestStaysSubscribed) {
  RawPeer peer(cluster_, ServerEndpoint());
  peer.Register(1, "test-secret");
  ASSERT_NE(peer.Receive(), nullptr);
  ASSERT_EQ(RawRead(peer, 1, 2), 0);  // subscribes the peer to row 2
  auto get = GetRequest(1, kTable, 2);
  get->envelope().getBody().getGet().initUnsubscribe(1).set(0, 2);
  peer.Send(get);
  auto reply = peer.Receive();
  ASSERT_NE(reply, nullptr);
  ASSERT_TRUE(reply->envelope().getBody().isRows());
  ExpectChangeOfRow2Pushed(peer, 7);
}

TEST_F(BadInputTest, BadUpdateBatchIsRejectedWholeAndResentBatchesApplyOnce) {
  RawPeer peer(cluster_, ServerEndpoint());
  peer.Register(1, "test-secret");
  ASSERT_NE(peer.Receive(), nullptr);
  // Row 2 is fine, row 77 is not: nothing of batch 1 may be applied.
  auto bad = UpdateBatch(1, 1, {2, 77}, 5);
  peer.Send(bad);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::OUT_OF_RANGE);
  EXPECT_EQ(RawRead(peer, 1, 2), 0);
  // The same sequence number with good content applies...
  auto good = UpdateBatch(1, 1, {2, 3}, 5);
  peer.Send(good);
  EXPECT_EQ(RawRead(peer, 1, 2), 5);
  // ...and a resend of it (a retry after a lost acknowledgement) is not applied again.
  auto again = UpdateBatch(1, 1, {2, 3}, 5);
  peer.Send(again);
  EXPECT_EQ(RawRead(peer, 1, 2), 5);
  EXPECT_EQ(cluster_.server(0).stats().duplicate_batches, 1u);
  // A gap in the sequence means batches were lost: refused, not applied out of order.
  auto gap = UpdateBatch(1, 3, {2}, 5);
  peer.Send(gap);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::DATA_LOSS);
  EXPECT_EQ(RawRead(peer, 1, 2), 5);
  ExpectClientStillServed(cluster_.client(0), 0);
}

// An update batch with one packed block of `rows` of table `table`, adding `delta` to column 0
// of each; `cells` overrides the number of cells (a well-formed block has 2 per row).
std::unique_ptr<OutgoingMessage> PackedUpdate(uint32_t rank, uint64_t seq, TableId table,
                                              std::vector<RowId> rows, int64_t delta,
                                              int cells = -1) {
  auto msg = std::make_unique<OutgoingMessage>(rank, 0);
  auto update = msg->envelope().getBody().initUpdate();
  update.setSeq(seq);
  auto block = update.initDense(1)[0];
  block.setTable(table);
  auto ids = block.initRows(static_cast<unsigned>(rows.size()));
  for (unsigned i = 0; i < rows.size(); ++i) ids.set(i, rows[i]);
  auto values =
      block.initValues().initI64(static_cast<unsigned>(cells >= 0 ? cells : 2 * rows.size()));
  for (unsigned i = 0; i < rows.size() && 2 * i < values.size(); ++i) values.set(2 * i, delta);
  return msg;
}

TEST_F(BadInputTest, BadPackedUpdateBlockIsRejectedWhole) {
  RawPeer peer(cluster_, ServerEndpoint());
  peer.Register(1, "test-secret");
  ASSERT_NE(peer.Receive(), nullptr);
  // Each bad batch also carries a good per-row update of row 3: nothing of it may apply.
  auto with_good_row = [](std::unique_ptr<OutgoingMessage> msg) {
    auto rows = msg->envelope().getBody().getUpdate().initRows(1);
    rows[0].setTable(kTable);
    rows[0].setRow(3);
    rows[0].initValues().initI64(2).set(0, 100);
    return msg;
  };
  auto out_of_range = with_good_row(PackedUpdate(1, 1, kTable, {2, 77}, 5));
  peer.Send(out_of_range);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::OUT_OF_RANGE);
  auto unknown_table = with_good_row(PackedUpdate(1, 1, 9, {2}, 5));
  peer.Send(unknown_table);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::NOT_FOUND);
  auto short_block = with_good_row(PackedUpdate(1, 1, kTable, {1, 2}, 5, 3));
  peer.Send(short_block);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::INVALID_ARGUMENT);
  auto wrong_type = with_good_row(PackedUpdate(1, 1, kTable, {2}, 5));
  wrong_type->envelope().getBody().getUpdate().getDense()[0].initValues().initF32(2);
  peer.Send(wrong_type);
  EXPECT_EQ(peer.ExpectError(), proto::ErrorCode::INVALID_ARGUMENT);
  EXPECT_EQ(RawRead(peer, 1, 2), 0);
  EXPECT_EQ(RawRead(peer, 1, 3), 0);
  // The same sequence number, well formed, applies once: the packed rows and the per-row one.
  auto good = with_good_row(PackedUpdate(1, 1, kTable, {1, 2}, 5));
  peer.Send(good);
  EXPECT_EQ(RawRead(peer, 1, 1), 5);
  EXPECT_EQ(RawRead(peer, 1, 2), 5);
  EXPECT_EQ(RawRead(peer, 1, 3), 100);
  ExpectClientStillServed(cluster_.client(0), 0);
}

TEST_F(BadInputTest, PeerThatVanishesMidRequestDoesNotStopTheServer) {
  {
    RawPeer peer(cluster_, ServerEndpoint());
    peer.Register(1, "test-secret");
    ASSERT_NE(peer.Receive(), nullptr);
    // A read that must wait for clock 1, then the peer clocks and disappears without a reply.
    auto parked = GetRequest(1, kTable, 0, 1);
    peer.Send(parked);
    OutgoingMessage tick(1, 0);
    tick.envelope().getBody().initClock().setClock(1);
    peer.Send(tick);
    auto leave_marker = GetRequest(1, kTable, 1);  // answered at once: the server saw the tick
    peer.Send(leave_marker);
    ASSERT_NE(peer.Receive(), nullptr);
  }
  // Worker 0 clocks: the server's clock reaches 1 and it answers the vanished peer's read.
  Client& c = cluster_.client(0);
  ASSERT_TRUE(c.Inc<int64_t>(kTable, 0, 0, 4).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  ExpectClientStillServed(c, 4);
  EXPECT_EQ(cluster_.server(0).stats().clock, 1);
}

TEST(ClientErrorsTest, ClientRejectsBadCallsWithClearErrors) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1});
  Client& c = cluster.client(0);
  ASSERT_TRUE(c.CreateTable(Counters()).ok());
  std::vector<int64_t> row;
  std::vector<float> frow;
  EXPECT_EQ(c.Get<int64_t>(0, 42, 0, &row).code(), StatusCode::kNotFound);
  EXPECT_EQ(c.Get<int64_t>(0, kTable, 4, &row).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c.Get<float>(0, kTable, 0, &frow).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Get<int64_t>(3, kTable, 0, &row).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Inc<int64_t>(kTable, 0, 2, 1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c.Inc<int64_t>(kTable, 9, 0, 1).code(), StatusCode::kOutOfRange);
  std::vector<int64_t> wrong_width = {1, 2, 3};
  EXPECT_EQ(c.IncRow<int64_t>(kTable, 0, wrong_width).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.CreateTable(Counters(8)).code(), StatusCode::kFailedPrecondition);
  TableSpec nameless = Counters();
  nameless.id = 5;
  nameless.name = "";
  EXPECT_EQ(c.CreateTable(nameless).code(), StatusCode::kInvalidArgument);
  // None of the rejected increments reached the table.
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Get<int64_t>(0, kTable, 0, &row).ok());
  EXPECT_EQ(row, (std::vector<int64_t>{0, 0}));
}

// A client used before Start has no servers to talk to: the calls that would send say so, and
// the rest find no table; nothing is sent, and Start afterwards works as usual.
TEST(ClientErrorsTest, CallsBeforeStartAreRefused) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1, .num_clients = 0});
  ClientOptions options;
  options.coordinator = cluster.coordinator().endpoint();
  options.secret = cluster.options().secret;
  options.timeout = std::chrono::seconds(10);
  Client c(options, cluster.context());
  for (Status s : {c.CreateTable(Counters()), c.Clock(0), c.Barrier()}) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("before Start()"), std::string::npos) << s.ToString();
  }
  std::vector<int64_t> row;
  EXPECT_EQ(c.Get<int64_t>(0, kTable, 0, &row).code(), StatusCode::kNotFound);
  EXPECT_EQ(c.Inc<int64_t>(kTable, 0, 0, 1).code(), StatusCode::kNotFound);
  Status started = c.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  ASSERT_TRUE(c.CreateTable(Counters()).ok());
  ASSERT_TRUE(c.Inc<int64_t>(kTable, 0, 0, 3).ok());
  ASSERT_TRUE(c.Clock(0).ok());
  ASSERT_TRUE(c.Get<int64_t>(0, kTable, 0, &row).ok());
  EXPECT_EQ(row, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(cluster.server(0).stats().clock, 1);
}

TEST(ClientErrorsTest, MissingCoordinatorIsUnavailable) {
  zmq::context_t context;
  ClientOptions options;
  options.coordinator = "inproc://nobody-listens-here";
  options.timeout = std::chrono::milliseconds(200);
  Client c(options, context);
  Status s = c.Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

TEST(ClientErrorsTest, WrongSecretIsRefusedByTheCoordinator) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 2, .num_clients = 1});
  ClientOptions options;
  options.rank = 1;
  options.coordinator = cluster.coordinator().endpoint();
  options.secret = "wrong";
  options.timeout = std::chrono::seconds(10);
  Client c(options, cluster.context());
  Status s = c.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("secret"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace tessera
