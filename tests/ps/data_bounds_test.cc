// The bounds of a server's data socket (docs/security.md): update batches larger
// than a frame may be (kDataPartBytes) are sent in parts and applied whole; a frame over the
// bound closes only the connection that sent it, logged with the socket's name and the bound;
// and a worker that does not read what the server sends it fills a bounded queue, after which it
// is told what it lost (an Error) instead of going on without it, while the others are served.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "in_process_cluster.h"
#include "raw_peer.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/security.h"
#include "tests/support/log_capture.h"
#include "tests/support/stranger.h"

namespace tessera {
namespace {

using testing::InProcessCluster;
using testing::LogCapture;
using testing::RawPeer;

constexpr TableId kTable = 1;

// Adds 1 to column 0 of `row` (not read before: the read goes to the server) and reads it back,
// after a clock when `clock` (a job of one worker): the server still serves this client.
void ExpectServed(Client& client, RowId row, bool clock) {
  ASSERT_TRUE(client.Inc<int64_t>(kTable, row, 0, 1).ok());
  if (clock) {
    ASSERT_TRUE(client.Clock(0).ok());
  }
  std::vector<int64_t> cells;
  ASSERT_TRUE(client.Get<int64_t>(0, kTable, row, &cells).ok());
  ASSERT_FALSE(cells.empty());
  EXPECT_EQ(cells[0], 1);
}

// Two workers each add a 20 MB row (more than a frame) over CURVE tcp: both batches are applied
// whole, cell for cell.
TEST(DataBoundsTest, UpdateBatchesLargerThanAFrameAreAppliedWhole) {
  InProcessCluster cluster({.num_servers = 1, .num_workers = 2, .tcp = true});
  constexpr uint32_t kWidth = 2'500'000;  // doubles: 20 MB, over kDataPartBytes
  static_assert(uint64_t{kWidth} * 8 > static_cast<uint64_t>(kDataPartBytes));
  const TableSpec spec = testing::TestTable(kTable, "wide", ValueType::kFloat64, 2, kWidth);
  std::vector<std::thread> workers;
  std::vector<std::vector<double>> got(2);
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      Client& c = cluster.client(w);
      ASSERT_TRUE(c.CreateTable(spec).ok());
      std::vector<double> delta(kWidth);
      for (uint32_t i = 0; i < kWidth; ++i) delta[i] = static_cast<double>(i) + w;
      ASSERT_TRUE(c.IncRow<double>(kTable, 1, delta).ok());
      ASSERT_TRUE(c.Clock(0).ok());
      ASSERT_TRUE(c.Get<double>(0, kTable, 1, &got[w]).ok());  // waits for both clocks
    });
  }
  for (auto& t : workers) t.join();
  for (int w = 0; w < 2; ++w) {
    ASSERT_EQ(got[w].size(), kWidth);
    size_t wrong = 0;
    for (uint32_t i = 0; i < kWidth; ++i) wrong += got[w][i] != 2.0 * i + 1;
    EXPECT_EQ(wrong, 0u) << "worker " << w;
  }
  EXPECT_EQ(cluster.server(0).stats().rejected_messages, 0u);
}

// A frame over the server's bound from a connection holding the secret, or from anyone under
// --insecure: ZeroMQ closes that connection before reading the frame whole; the server logs it,
// naming its socket and the bound, and serves its workers on.
class OversizedFrameTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OversizedFrameTest, ClosesOnlyThatConnectionAndIsLogged) {
  LogCapture log;  // first: the nodes copy its sink
  InProcessCluster cluster({.num_servers = 1, .num_workers = 1, .tcp = true, .secret = GetParam()});
  Client& client = cluster.client(0);
  ASSERT_TRUE(
      client.CreateTable(testing::TestTable(kTable, "counters", ValueType::kInt64, 4, 2)).ok());
  ExpectServed(client, 0, true);
  zmq::socket_t big(cluster.context(), zmq::socket_type::dealer);
  ConfigureSocket(big);
  SecureConnectSide(big, GetParam());
  testing::SocketEvents events(cluster.context(), big);
  big.connect(cluster.server(0).endpoint());
  ASSERT_EQ(events.Next(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  big.send(zmq::message_t(static_cast<size_t>(kMaxDataFrameBytes) + 1), zmq::send_flags::none);
  EXPECT_EQ(events.Next(), ZMQ_EVENT_DISCONNECTED);
  ExpectServed(client, 1, true);
  EXPECT_TRUE(log.WaitFor("server 0 " + cluster.server(0).endpoint() +
                          ": a connection on which no whole message arrived (fd "));
  EXPECT_EQ(log.Count(fmt::format("over this socket's bound of {} bytes", kMaxDataFrameBytes)), 1);
  EXPECT_EQ(cluster.server(0).stats().rejected_messages, 0u);
}

INSTANTIATE_TEST_SUITE_P(SecretOrInsecure, OversizedFrameTest,
                         ::testing::Values(std::string("test-secret"), std::string("")),
                         [](const auto& info) {
                           return info.param.empty() ? "Insecure" : "Secret";
                         });

// A registered worker's connection closed that way is logged by name: it may have lost a batch.
TEST(DataBoundsTest, ARegisteredWorkersOversizedFrameIsLoggedByName) {
  LogCapture log;
  InProcessCluster cluster({.num_servers = 1, .num_workers = 2, .num_clients = 1, .tcp = true});
  Client& client = cluster.client(0);
  ASSERT_TRUE(
      client.CreateTable(testing::TestTable(kTable, "counters", ValueType::kInt64, 4, 2)).ok());
  RawPeer worker1(cluster, cluster.server(0).endpoint());
  worker1.Register(1, cluster.options().secret);
  auto membership = worker1.Receive();
  ASSERT_NE(membership, nullptr);
  ASSERT_TRUE(membership->envelope().getBody().isMembership());
  worker1.SendBytes(std::string(static_cast<size_t>(kMaxDataFrameBytes) + 1, 'x'));
  EXPECT_TRUE(log.WaitFor("server 0 " + cluster.server(0).endpoint() +
                          ": worker 1's connection, before it left, (fd "));
  ASSERT_TRUE(client.Inc<int64_t>(kTable, 0, 0, 5).ok());
  std::vector<int64_t> row;
  ASSERT_TRUE(client.Get<int64_t>(0, kTable, 0, &row).ok());
  EXPECT_EQ(row[0], 5);
}

// Worker 1 (a raw peer) asks for 200 rows of 512 KiB and reads nothing: the server's queue for
// it fills (4 messages here, and the sockets' buffers), the rest of its answers are dropped and
// counted, and once it reads again the last thing it gets is an Error (DataLoss) saying how many
// were dropped and why; nothing goes missing silently. Worker 0 is served throughout.
TEST(DataBoundsTest, AWorkerThatDoesNotReadIsToldWhatItLost) {
  LogCapture log;
  InProcessCluster cluster(
      {.num_servers = 1, .num_workers = 2, .num_clients = 1, .tcp = true, .server_send_queue = 4});
  Client& client = cluster.client(0);
  constexpr uint32_t kWide = 65536;  // doubles: 512 KiB answers
  ASSERT_TRUE(
      client.CreateTable(testing::TestTable(kTable, "counters", ValueType::kInt64, 4, 2)).ok());
  ASSERT_TRUE(
      client.CreateTable(testing::TestTable(2, "wide", ValueType::kFloat64, 1, kWide)).ok());
  RawPeer worker1(cluster, cluster.server(0).endpoint());
  worker1.Register(1, cluster.options().secret);
  ASSERT_NE(worker1.Receive(), nullptr);
  constexpr int kReads = 200;
  for (int i = 0; i < kReads; ++i) {
    OutgoingMessage get(1, 100 + i);
    auto g = get.envelope().getBody().initGet();
    g.setTable(2);
    g.initRows(1).set(0, 0);
    worker1.Send(get);
  }
  EXPECT_TRUE(log.WaitFor("worker 1 has 4 messages from this server queued that it has not read"));
  ExpectServed(client, 0, false);  // while worker 1's queue is full
  int answers = 0;
  std::string error;
  while (error.empty()) {
    auto msg = worker1.Receive();  // nullptr after 10 s: a failure, not a wait for the server
    ASSERT_NE(msg, nullptr) << "after " << answers << " answers, no Error";
    auto body = msg->envelope().getBody();
    if (body.isRows()) {
      ++answers;
    } else {
      ASSERT_TRUE(body.isError());
      EXPECT_EQ(msg->envelope().getRequestId(), 0u);
      EXPECT_EQ(body.getError().getCode(), proto::ErrorCode::DATA_LOSS);
      error = body.getError().getMessage();
    }
  }
  EXPECT_GT(answers, 0);
  EXPECT_LT(answers, kReads);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      error, m,
      std::regex("server 0 dropped ([0-9]+) messages \\(answers, pushes\\) to this worker because "
                 "more than 4 it had not read were queued for it")))
      << error;
  const ServerStats stats = cluster.server(0).stats();
  EXPECT_EQ(stats.overrun_workers, 1u);
  EXPECT_GE(stats.overrun_messages, std::stoull(m[1].str()));
  EXPECT_LE(stats.overrun_messages + static_cast<uint64_t>(answers), static_cast<uint64_t>(kReads));
  ExpectServed(client, 1, false);
}

}  // namespace
}  // namespace tessera
