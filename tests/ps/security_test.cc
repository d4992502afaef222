// The coordinator and the servers of a job over tcp, against strangers and misbehaving peers
// (docs/security.md): a process without the secret gets nothing through (no forged
// update applied, no barrier counted); a peer of the job that sends a barrier without having
// registered, floods barriers or sends an oversized frame is refused, logged (rate-limited) and
// the job goes on with exact results.
#include "tessera/transport/security.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "in_process_cluster.h"
#include "raw_peer.h"
#include "tessera/transport/message.h"
#include "tests/support/log_capture.h"
#include "tests/support/stranger.h"

namespace tessera {
namespace {

using testing::ConnectAndSend;
using testing::Handshake;
using testing::InProcessCluster;
using testing::LogCapture;
using testing::RawPeer;

constexpr TableId kTable = 1;

TableSpec Counters() { return testing::TestTable(kTable, "counters", ValueType::kInt64, 4, 2); }

std::string Bytes(OutgoingMessage& msg) {
  const zmq::message_t frame = msg.ToFrame();
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

class SecurityTest : public ::testing::Test {
 protected:
  // Over tcp (ZeroMQ runs no security mechanism on inproc://), worker 1 played by raw peers.
  SecurityTest() : cluster_({.num_servers = 1, .num_workers = 2, .num_clients = 1, .tcp = true}) {}
  void SetUp() override { ASSERT_TRUE(cluster_.client(0).CreateTable(Counters()).ok()); }

  int64_t Counter0() {
    std::vector<int64_t> row;
    EXPECT_TRUE(cluster_.client(0).Get<int64_t>(0, kTable, 0, &row).ok());
    return row.empty() ? -1 : row[0];
  }

  LogCapture log_;  // first: the cluster's nodes copy its sink
  InProcessCluster cluster_;
};

// The stranger forges worker 0's first update batch (+1000 to the counter) and a barrier, with no
// secret and with a wrong one: no handshake completes, so nothing is applied or counted.
TEST_F(SecurityTest, AStrangerCanNeitherInjectUpdatesNorCountInABarrier) {
  OutgoingMessage update(0, 0);
  auto u = update.envelope().getBody().initUpdate();
  u.setSeq(1);
  auto row = u.initRows(1)[0];
  row.setTable(kTable);
  row.setRow(0);
  row.initValues().initI64(2).set(0, 1000);
  const std::string forged_update = Bytes(update);
  OutgoingMessage barrier(1, 5);
  barrier.envelope().getBody().initBarrier().setId(1);
  const std::string forged_barrier = Bytes(barrier);
  for (const std::string& secret : {std::string(""), std::string("wrong")}) {
    EXPECT_EQ(
        ConnectAndSend(cluster_.context(), cluster_.server(0).endpoint(), secret, forged_update),
        Handshake::kFailed);
    EXPECT_EQ(ConnectAndSend(cluster_.context(), cluster_.coordinator().endpoint(), secret,
                             forged_barrier),
              Handshake::kFailed);
  }
  ASSERT_TRUE(testing::SendRawTcp(cluster_.server(0).endpoint(), testing::HttpHealthCheck()));
  ASSERT_TRUE(testing::SendRawTcp(cluster_.coordinator().endpoint(), testing::HttpHealthCheck()));
  // The receivers log the refusals (rate-limited) and go on.
  EXPECT_TRUE(log_.WaitFor("coordinator: refused a connection"));
  EXPECT_TRUE(log_.WaitFor("server 0: refused a connection"));

  // Worker 0's own update and the server's value (a forged +1000 would show): exactly 3.
  ASSERT_TRUE(cluster_.client(0).Inc<int64_t>(kTable, 0, 0, 3).ok());
  EXPECT_EQ(Counter0(), 3);
  EXPECT_EQ(cluster_.server(0).stats().rejected_messages, 0u);  // nothing even got to be read
}

// A barrier counts only registered workers: a peer of the job that has not registered is refused
// (without the rule, worker 0 would be released with nobody else at the barrier).
TEST_F(SecurityTest, ABarrierFromAnUnregisteredPeerDoesNotCount) {
  RawPeer stranger(cluster_, cluster_.coordinator().endpoint());
  for (uint64_t id : {1, 2}) {
    OutgoingMessage msg(1, 8);
    msg.envelope().getBody().initBarrier().setId(id);
    stranger.Send(msg);
    EXPECT_EQ(stranger.ExpectError(), proto::ErrorCode::UNAUTHENTICATED);
  }
  EXPECT_GE(log_.Count("from a peer that has not registered as a worker"), 1);

  // The real worker 0 and a worker 1 that registers properly pass two barriers together.
  RawPeer worker1(cluster_, cluster_.coordinator().endpoint());
  OutgoingMessage reg(1, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(proto::Role::WORKER);
  r.setRank(1);
  r.setSecret(SecretProof(cluster_.options().secret));
  worker1.Send(reg);
  auto membership = worker1.Receive();
  ASSERT_NE(membership, nullptr);
  ASSERT_TRUE(membership->envelope().getBody().isMembership());
  for (uint64_t id : {1, 2}) {
    auto released = std::async(std::launch::async, [&] { return cluster_.client(0).Barrier(); });
    OutgoingMessage msg(1, 20 + id);
    msg.envelope().getBody().initBarrier().setId(id);
    worker1.Send(msg);
    auto reply = worker1.Receive();
    ASSERT_NE(reply, nullptr);
    ASSERT_TRUE(reply->envelope().getBody().isBarrierRelease());
    EXPECT_EQ(reply->envelope().getBody().getBarrierRelease().getId(), id);
    EXPECT_TRUE(released.get().ok());
  }
}

// A registered worker may hold only a few barriers open and arrive at each once; a flood of
// distinct ids is refused, so the coordinator's state stays bounded. Its log is rate-limited.
TEST_F(SecurityTest, ABarrierFloodIsBoundedAndTheLogThrottled) {
  RawPeer worker1(cluster_, cluster_.coordinator().endpoint());
  OutgoingMessage reg(1, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(proto::Role::WORKER);
  r.setRank(1);
  r.setSecret(SecretProof(cluster_.options().secret));
  worker1.Send(reg);
  ASSERT_NE(worker1.Receive(), nullptr);
  auto send_barrier = [&](uint64_t id) {
    OutgoingMessage msg(1, id);
    msg.envelope().getBody().initBarrier().setId(id);
    worker1.Send(msg);
  };
  for (uint64_t id = 1; id <= 4; ++id) send_barrier(id);  // open, unanswered
  send_barrier(1);
  EXPECT_EQ(worker1.ExpectError(), proto::ErrorCode::FAILED_PRECONDITION);  // already waiting
  constexpr int kFlood = 2000;
  // Each refusal read before the next barrier: the coordinator queues at most 1000 answers for a
  // peer that does not read them (the rest are dropped), which is not what is tested here.
  for (uint64_t id = 100; id < 100 + kFlood; ++id) {
    send_barrier(id);
    ASSERT_EQ(worker1.ExpectError(), proto::ErrorCode::FAILED_PRECONDITION) << id;
  }
  // 2001 refusals, at most 10 lines (one window of the throttle, the test takes well under 10 s).
  EXPECT_LE(log_.Count("rejecting message"), 10);
  EXPECT_GE(log_.Count("rejecting message"), 1);
  // Barrier 1 is still open with worker 1 in it: worker 0's arrival releases both.
  EXPECT_TRUE(cluster_.client(0).Barrier().ok());
  auto reply = worker1.Receive();
  ASSERT_NE(reply, nullptr);
  EXPECT_TRUE(reply->envelope().getBody().isBarrierRelease());
}

// A peer of the job whose frame is over the coordinator's bound (1 MiB) loses its connection
// before the frame is read whole; the coordinator goes on.
TEST_F(SecurityTest, AnOversizedFrameToTheCoordinatorIsRefused) {
  zmq::socket_t big(cluster_.context(), zmq::socket_type::dealer);
  ConfigureSocket(big);
  SecureConnectSide(big, cluster_.options().secret);
  testing::SocketEvents events(cluster_.context(), big);
  big.connect(cluster_.coordinator().endpoint());
  ASSERT_EQ(events.Next(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  big.send(zmq::buffer(std::string(100 << 20, 'x')), zmq::send_flags::none);
  EXPECT_EQ(events.Next(), ZMQ_EVENT_DISCONNECTED);
  // The job goes on: a barrier of both workers still works.
  RawPeer worker1(cluster_, cluster_.coordinator().endpoint());
  OutgoingMessage reg(1, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(proto::Role::WORKER);
  r.setRank(1);
  r.setSecret(SecretProof(cluster_.options().secret));
  worker1.Send(reg);
  ASSERT_NE(worker1.Receive(), nullptr);
  auto released = std::async(std::launch::async, [&] { return cluster_.client(0).Barrier(); });
  OutgoingMessage msg(1, 2);
  msg.envelope().getBody().initBarrier().setId(1);
  worker1.Send(msg);
  EXPECT_TRUE(released.get().ok());
}

// A process started with another secret cannot connect: it fails to join as soon as the
// coordinator has refused its handshakes a few times (ZeroMQ retries every 100 ms), long before
// its time-out, and says why.
TEST_F(SecurityTest, AClientWithAnotherSecretCannotJoinAndSaysWhy) {
  ClientOptions options;
  options.rank = 1;
  options.coordinator = cluster_.coordinator().endpoint();
  options.secret = "another-secret";
  options.timeout = std::chrono::seconds(60);  // a bound the refusal must come well before
  Client c(options, cluster_.context());
  const auto start = std::chrono::steady_clock::now();
  Status s = c.Start();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("another job secret"), std::string::npos) << s.ToString();
  EXPECT_TRUE(log_.WaitFor("coordinator: refused a connection"));
}

// A process started without a secret against a coordinator that has one cannot connect either:
// its one handshake is refused (ZeroMQ does not retry a mechanism mismatch) and the join fails at
// once, naming the cause, not after its time-out.
TEST_F(SecurityTest, AClientWithoutASecretCannotJoinAndSaysWhy) {
  ClientOptions options;
  options.rank = 1;
  options.coordinator = cluster_.coordinator().endpoint();
  options.secret = "";
  options.timeout = std::chrono::seconds(60);  // a bound the refusal must come well before
  Client c(options, cluster_.context());
  const auto start = std::chrono::steady_clock::now();
  Status s = c.Start();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("this process has no job secret and the coordinator has one"),
            std::string::npos)
      << s.ToString();
}

// The other way round: a process with a secret against a coordinator run without one.
TEST(SecurityMismatchTest, AClientWithASecretCannotJoinAnInsecureJobAndSaysWhy) {
  InProcessCluster insecure(
      {.num_servers = 1, .num_workers = 1, .num_clients = 0, .tcp = true, .secret = ""});
  ClientOptions options;
  options.rank = 0;
  options.coordinator = insecure.coordinator().endpoint();
  options.secret = "a-secret";
  options.timeout = std::chrono::seconds(60);
  Client c(options, insecure.context());
  const auto start = std::chrono::steady_clock::now();
  Status s = c.Start();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("the coordinator has none"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace tessera
