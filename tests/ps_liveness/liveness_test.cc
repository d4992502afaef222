// The coordinator's liveness checks and the LivenessAgent, in one process: a peer that stops
// heartbeating fails the job and is named; a peer that leaves does not; an agent that loses the
// coordinator, or is rejected by it, reports it.
#include "tessera/transport/liveness.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tessera/server/coordinator.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/security.h"
#include "tests/support/stranger.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTimeout{600};

// What an agent's on_failure saw, waited for with a deadline.
class FailureSink {
 public:
  std::function<void(const std::string&, int)> Callback() {
    return [this](const std::string& reason, int code) {
      std::lock_guard lock(mu_);
      if (!reason_) {
        reason_ = reason;
        code_ = code;
        at_ = Clock::now();
      }
      cv_.notify_all();
    };
  }
  // The reason, or nullopt if none came within `within`.
  std::optional<std::string> Wait(milliseconds within) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, within, [&] { return reason_.has_value(); });
    return reason_;
  }
  int code() {
    std::lock_guard lock(mu_);
    return code_;
  }
  Clock::time_point at() {
    std::lock_guard lock(mu_);
    return at_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> reason_;
  int code_ = 0;
  Clock::time_point at_;
};

// A peer that heartbeats only when told to: a process that stops answering, on demand.
class ManualPeer {
 public:
  ManualPeer(zmq::context_t& ctx, const std::string& endpoint, proto::Role role, uint32_t rank,
             const std::string& secret)
      : socket_(ctx, zmq::socket_type::dealer), role_(role), rank_(rank), secret_(secret) {
    ConfigureSocket(socket_);
    SecureConnectSide(socket_, secret);
    socket_.connect(endpoint);
  }
  void Beat(bool leaving = false) {
    OutgoingMessage msg(rank_, 0);
    auto hb = msg.envelope().getBody().initHeartbeat();
    hb.setRole(role_);
    hb.setRank(rank_);
    hb.setPid(4242);
    hb.setHost("node7");
    hb.setSecret(SecretProof(secret_));
    hb.setLeaving(leaving);
    socket_.send(msg.ToFrame(), zmq::send_flags::none);
  }
  // Joins like a client without heartbeats (ClientOptions::heartbeat_timeout 0), or, with
  // `heartbeats`, like one whose agent runs.
  void Register(bool heartbeats = false) {
    OutgoingMessage msg(rank_, 1);
    auto reg = msg.envelope().getBody().initRegister();
    reg.setRole(role_);
    reg.setRank(rank_);
    reg.setSecret(SecretProof(secret_));
    if (heartbeats) {
      reg.setHeartbeats(true);
      reg.setPid(4242);
      reg.setHost("node7");
    }
    socket_.send(msg.ToFrame(), zmq::send_flags::none);
  }
  // A worker's barrier `id` (answered later: a release or an error) and its Leave.
  void Barrier(uint64_t id) {
    OutgoingMessage msg(rank_, 100 + id);
    msg.envelope().getBody().initBarrier().setId(id);
    socket_.send(msg.ToFrame(), zmq::send_flags::none);
  }
  void Leave() {
    OutgoingMessage msg(rank_, 0);
    msg.envelope().getBody().initLeave().setRank(rank_);
    socket_.send(msg.ToFrame(), zmq::send_flags::none);
  }
  // Closes the connection, as the process's exit would.
  void Close() {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.close();
  }
  // The next message's error, waiting up to `within` (nullopt: none, or not an error).
  std::optional<std::pair<proto::ErrorCode, std::string>> NextError(milliseconds within) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, within) <= 0) return std::nullopt;
    zmq::message_t frame;
    (void)socket_.recv(frame);
    auto msg = IncomingMessage::Parse(std::move(frame));
    if (!msg.ok() || !(*msg)->envelope().getBody().isError()) return std::nullopt;
    auto e = (*msg)->envelope().getBody().getError();
    return std::make_pair(e.getCode(), std::string(e.getMessage().cStr()));
  }
  // The next message's body kind, waiting up to `within`.
  std::optional<proto::Envelope::Body::Which> Next(milliseconds within) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, within) <= 0) return std::nullopt;
    zmq::message_t frame;
    (void)socket_.recv(frame);
    auto msg = IncomingMessage::Parse(std::move(frame));
    if (!msg.ok()) return std::nullopt;
    return (*msg)->envelope().getBody().which();
  }

 private:
  zmq::socket_t socket_;
  proto::Role role_;
  uint32_t rank_;
  std::string secret_;
};

class LivenessTest : public ::testing::Test {
 protected:
  // A coordinator for 1 server and 2 workers with kTimeout.
  void StartCoordinator(milliseconds first_heartbeat_grace = milliseconds(60000)) {
    CoordinatorOptions o;
    o.listen = "tcp://127.0.0.1:0";
    o.num_servers = 1;
    o.num_workers = 2;
    o.secret = "s3cret";
    o.heartbeat_timeout = kTimeout;
    o.first_heartbeat_grace = first_heartbeat_grace;
    coordinator_ = std::make_unique<Coordinator>(o, ctx_);
    ASSERT_TRUE(coordinator_->Start().ok());
  }

  std::unique_ptr<LivenessAgent> Agent(proto::Role role, uint32_t rank, FailureSink& sink,
                                       const std::string& secret = "s3cret") {
    auto agent = LivenessAgent::Start({.coordinator = coordinator_->endpoint(),
                                       .role = role,
                                       .rank = rank,
                                       .secret = secret,
                                       .timeout = kTimeout,
                                       .on_failure = sink.Callback()},
                                      ctx_);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? std::move(agent).value() : nullptr;
  }

  zmq::context_t ctx_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST(LivenessTimingTest, ParsesTimeoutsAndDerivesPeriods) {
  EXPECT_EQ(*ParseHeartbeatTimeout("10", "X"), milliseconds(10000));
  EXPECT_EQ(*ParseHeartbeatTimeout("2.5", "X"), milliseconds(2500));
  EXPECT_EQ(*ParseHeartbeatTimeout("0", "X"), milliseconds(0));
  for (const char* bad : {"", "-1", "ten", "10s", "1e9", "nan"}) {
    auto r = ParseHeartbeatTimeout(bad, "TESSERA_HEARTBEAT_TIMEOUT");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("TESSERA_HEARTBEAT_TIMEOUT"), std::string::npos);
  }
  const LivenessTiming t = LivenessTiming::For(milliseconds(10000));
  EXPECT_EQ(t.interval, milliseconds(1000));
  EXPECT_EQ(t.silence, milliseconds(8000));
  EXPECT_EQ(t.check, milliseconds(100));
  // The report comes within the timeout: silence plus one check.
  EXPECT_LT(t.silence + t.check, milliseconds(10000));
}

TEST_F(LivenessTest, SilentWorkerFailsTheJobAndIsNamed) {
  StartCoordinator();
  FailureSink server_sink, worker_sink;
  auto server = Agent(proto::Role::SERVER, 0, server_sink);
  auto worker0 = Agent(proto::Role::WORKER, 0, worker_sink);
  ManualPeer worker1(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 1, "s3cret");
  worker1.Beat();
  ASSERT_EQ(worker1.Next(milliseconds(5000)), proto::Envelope::Body::HEARTBEAT_ACK);
  const auto stopped = Clock::now();  // worker 1 stops answering here
  // Without a launcher, every process is told, and the coordinator ends with 124.
  auto reason = worker_sink.Wait(milliseconds(10000));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("worker 1 (pid 4242 on node7) stopped answering"), std::string::npos)
      << *reason;
  EXPECT_EQ(worker_sink.code(), kExitJobFailed);
  EXPECT_LT(worker_sink.at() - stopped, kTimeout);
  ASSERT_TRUE(server_sink.Wait(milliseconds(5000)).has_value());
  EXPECT_EQ(worker1.Next(milliseconds(5000)), proto::Envelope::Body::JOB_FAILED);
  coordinator_->WaitUntilDone();
  EXPECT_EQ(coordinator_->exit_code(), kExitUnresponsive);
}

// A worker whose connection closes before it left (it exited 76 because another worker left the
// program early, or was killed): the barrier another worker waits at -- its final one -- fails at
// once with peerLeft, so that it goes on to exit with its own status, and so does every later
// one. Without a launcher, once every other worker has left, the job fails (75), at once.
TEST_F(LivenessTest, AWorkerGoneWithoutLeavingFailsEveryBarrier) {
  StartCoordinator();
  ManualPeer worker0(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 0, "s3cret");
  ManualPeer worker1(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 1, "s3cret");
  ManualPeer server(ctx_, coordinator_->endpoint(), proto::Role::SERVER, 0, "s3cret");
  server.Register();
  worker0.Register();
  worker1.Register();
  // Every one registered (the membership answers once the server has).
  ASSERT_EQ(worker0.Next(milliseconds(5000)), proto::Envelope::Body::MEMBERSHIP);
  ASSERT_EQ(worker1.Next(milliseconds(5000)), proto::Envelope::Body::MEMBERSHIP);
  worker0.Barrier(1);
  worker1.Close();
  auto error = worker0.NextError(milliseconds(5000));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->first, proto::ErrorCode::PEER_LEFT);
  EXPECT_NE(error->second.find("worker 1 exited without leaving the job"), std::string::npos)
      << error->second;
  worker0.Barrier(2);
  error = worker0.NextError(milliseconds(5000));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->first, proto::ErrorCode::PEER_LEFT);
  worker0.Leave();
  coordinator_->WaitUntilDone();
  EXPECT_EQ(coordinator_->exit_code(), kExitJobFailed);
}

TEST_F(LivenessTest, WithALauncherOnlyTheLauncherIsTold) {
  StartCoordinator();
  FailureSink worker_sink;
  ManualPeer launcher(ctx_, coordinator_->endpoint(), proto::Role::LAUNCHER, 0, "s3cret");
  launcher.Beat();
  ASSERT_EQ(launcher.Next(milliseconds(5000)), proto::Envelope::Body::HEARTBEAT_ACK);
  auto worker0 = Agent(proto::Role::WORKER, 0, worker_sink);
  ManualPeer server(ctx_, coordinator_->endpoint(), proto::Role::SERVER, 0, "s3cret");
  server.Beat();
  ASSERT_EQ(server.Next(milliseconds(5000)), proto::Envelope::Body::HEARTBEAT_ACK);
  // The server goes silent; the launcher keeps answering until it hears of the failure.
  const auto deadline = Clock::now() + milliseconds(10000);
  std::optional<proto::Envelope::Body::Which> got;
  while (Clock::now() < deadline) {
    launcher.Beat();
    got = launcher.Next(milliseconds(50));
    if (got == proto::Envelope::Body::JOB_FAILED) break;
  }
  EXPECT_EQ(got, proto::Envelope::Body::JOB_FAILED);
  // The launcher stops the processes; they are not told to exit by themselves.
  EXPECT_FALSE(worker_sink.Wait(milliseconds(100)).has_value());
}

TEST_F(LivenessTest, LeavingIsNotAFailure) {
  StartCoordinator();
  FailureSink sink, leaver_sink;
  auto worker0 = Agent(proto::Role::WORKER, 0, sink);
  auto worker1 = Agent(proto::Role::WORKER, 1, leaver_sink);
  auto server = Agent(proto::Role::SERVER, 0, sink);
  worker1->Leave();
  // Several timeouts pass without worker 1: nothing fails.
  EXPECT_FALSE(sink.Wait(3 * kTimeout).has_value());
  EXPECT_FALSE(leaver_sink.Wait(milliseconds(0)).has_value());
}

TEST_F(LivenessTest, AgentReportsALostCoordinator) {
  StartCoordinator();
  FailureSink sink;
  auto worker0 = Agent(proto::Role::WORKER, 0, sink);
  // Once the agent has been answered, stop the coordinator: the agent must notice within the
  // timeout.
  const auto answer_deadline = Clock::now() + milliseconds(5000);
  while (!worker0->answered() && Clock::now() < answer_deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(worker0->answered());
  const auto stopped = Clock::now();
  coordinator_->Stop();
  auto reason = sink.Wait(milliseconds(10000));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("lost the coordinator"), std::string::npos) << *reason;
  EXPECT_EQ(sink.code(), kExitJobFailed);
  // An agent answered before the stop gives up after the silence; one never answered would wait
  // for the start-up grace (60 s) instead, which this test would not survive.
  EXPECT_LT(sink.at() - stopped, kTimeout + milliseconds(200));
}

// A process with another secret (or none) cannot even complete the handshake: its heartbeats never
// reach the coordinator, while a process with the secret is answered. A holder of the CURVE keys
// whose heartbeat carries a wrong proof (an inproc:// peer, where ZeroMQ runs no security
// mechanism) is refused by the coordinator.
TEST_F(LivenessTest, WrongSecretIsRejected) {
  StartCoordinator();
  OutgoingMessage hb(0, 0);
  auto beat = hb.envelope().getBody().initHeartbeat();
  beat.setRole(proto::Role::WORKER);
  beat.setSecret(SecretProof("wrong"));
  const zmq::message_t frame = hb.ToFrame();
  const std::string bytes(static_cast<const char*>(frame.data()), frame.size());
  EXPECT_EQ(testing::ConnectAndSend(ctx_, coordinator_->endpoint(), "wrong", bytes),
            testing::Handshake::kFailed);
  EXPECT_EQ(testing::ConnectAndSend(ctx_, coordinator_->endpoint(), "", bytes),
            testing::Handshake::kFailed);

  // A holder of the keys with the right proof is answered.
  ManualPeer member(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 1, "s3cret");
  member.Beat();
  EXPECT_EQ(member.Next(milliseconds(10000)), proto::Envelope::Body::HEARTBEAT_ACK);

  zmq::socket_t insider(ctx_, zmq::socket_type::dealer);
  ConfigureSocket(insider);
  SecureConnectSide(insider, "s3cret");
  insider.connect(coordinator_->endpoint());
  insider.send(zmq::message_t(frame.data(), frame.size()), zmq::send_flags::none);
  zmq::pollitem_t item{insider.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_GT(zmq::poll(&item, 1, std::chrono::seconds(10)), 0);
  zmq::message_t reply;
  (void)insider.recv(reply);
  auto msg = IncomingMessage::Parse(std::move(reply));
  ASSERT_TRUE(msg.ok());
  ASSERT_TRUE((*msg)->envelope().getBody().isError());
  EXPECT_EQ((*msg)->envelope().getBody().getError().getCode(), proto::ErrorCode::UNAUTHENTICATED);
}

TEST_F(LivenessTest, ProcessThatNeverHeartbeatsFailsAfterTheGrace) {
  StartCoordinator(/*first_heartbeat_grace=*/milliseconds(300));
  FailureSink sink;
  auto worker0 = Agent(proto::Role::WORKER, 0, sink);
  auto server = Agent(proto::Role::SERVER, 0, sink);
  auto reason = sink.Wait(milliseconds(10000));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("worker 1 sent no heartbeat"), std::string::npos) << *reason;
  coordinator_->WaitUntilDone();
  EXPECT_EQ(coordinator_->exit_code(), kExitUnresponsive);
}

// A process that registers saying it heartbeats and stops before its agent's first heartbeat
// arrives (it comes on another connection) is reported within the timeout, not never.
TEST_F(LivenessTest, ProcessStoppedBeforeItsFirstHeartbeatFailsTheJob) {
  StartCoordinator();
  FailureSink sink;
  auto worker0 = Agent(proto::Role::WORKER, 0, sink);
  auto server = Agent(proto::Role::SERVER, 0, sink);
  ManualPeer worker1(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 1, "s3cret");
  const auto joined = Clock::now();
  worker1.Register(/*heartbeats=*/true);
  auto reason = sink.Wait(milliseconds(10000));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("worker 1 (pid 4242 on node7) stopped answering"), std::string::npos)
      << *reason;
  EXPECT_NE(reason->find("since it joined the job"), std::string::npos) << *reason;
  EXPECT_LT(sink.at() - joined, kTimeout + milliseconds(200));
  coordinator_->WaitUntilDone();
  EXPECT_EQ(coordinator_->exit_code(), kExitUnresponsive);
}

// Its agent's heartbeats, once they come, are what is watched: registered first, heard later,
// the process is not reported while it keeps heartbeating.
TEST_F(LivenessTest, ProcessRegisteredBeforeItsFirstHeartbeatIsWatchedByItsHeartbeats) {
  StartCoordinator();
  FailureSink sink;
  auto worker0 = Agent(proto::Role::WORKER, 0, sink);
  auto server = Agent(proto::Role::SERVER, 0, sink);
  ManualPeer worker1(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 1, "s3cret");
  worker1.Register(/*heartbeats=*/true);
  // Heartbeats every tenth of the timeout for several timeouts: nothing fails.
  const auto until = Clock::now() + 3 * kTimeout;
  while (Clock::now() < until) {
    worker1.Beat();
    ASSERT_FALSE(sink.Wait(kTimeout / 10).has_value());
  }
}

TEST_F(LivenessTest, ProcessThatJoinsWithoutHeartbeatsIsNotWaitedFor) {
  StartCoordinator(/*first_heartbeat_grace=*/milliseconds(300));
  FailureSink sink;
  auto worker0 = Agent(proto::Role::WORKER, 0, sink);
  auto server = Agent(proto::Role::SERVER, 0, sink);
  ManualPeer worker1(ctx_, coordinator_->endpoint(), proto::Role::WORKER, 1, "s3cret");
  worker1.Register();
  // Well past the grace and several timeouts: nothing fails.
  EXPECT_FALSE(sink.Wait(3 * kTimeout).has_value());
}

}  // namespace
}  // namespace tessera
