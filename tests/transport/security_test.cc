// Job authentication (tessera/transport/security.h) and the bounds on what a bound socket takes
// (endpoint.h): only a peer with the job secret gets a message through; a stranger, a peer with
// another secret, plain TCP garbage and an oversized frame are refused while the receiver goes on.
#include "tessera/transport/security.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <zmq.hpp>

#include "tessera/common/log_throttle.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/secret_strength.h"
#include "tessera/transport/socket_limits.h"
#include "tests/support/stranger.h"

namespace tessera {
namespace {

using std::chrono::milliseconds;
using testing::ConnectAndSend;
using testing::Handshake;

TEST(SecurityTest, KeysAreDerivedDeterministicallyAndDifferPerSecret) {
  const JobKeys a = DeriveJobKeys("secret-a");
  const JobKeys again = DeriveJobKeys("secret-a");
  const JobKeys b = DeriveJobKeys("secret-b");
  EXPECT_EQ(a.server_public, again.server_public);
  EXPECT_EQ(a.client_secret, again.client_secret);
  EXPECT_NE(a.server_public, b.server_public);
  EXPECT_NE(a.client_public, b.client_public);
  EXPECT_NE(a.server_public, a.client_public);
}

TEST(SecurityTest, TheRegistrationProofDoesNotRevealTheSecret) {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  const std::string proof = SecretProof(secret);
  EXPECT_EQ(proof.size(), 32u);
  EXPECT_NE(proof, secret);
  EXPECT_EQ(proof, SecretProof(secret));
  EXPECT_NE(proof, SecretProof("another"));
  EXPECT_EQ(SecretProof(""), "");
}

TEST(SecretStrengthTest, ShortAndRepetitiveSecretsAreRefusedSayingWhy) {
  Status too_short = CheckSecretStrength("s3cret");
  EXPECT_EQ(too_short.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_short.message().find("has 6 characters, fewer than the 16"), std::string::npos)
      << too_short.message();
  EXPECT_NE(too_short.message().find("head -c16 /dev/urandom"), std::string::npos);
  EXPECT_EQ(too_short.message().find("s3cret"), std::string::npos) << "names the secret";
  EXPECT_EQ(CheckSecretStrength("").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSecretStrength("0123456789abcde").code(), StatusCode::kInvalidArgument);

  Status repetitive = CheckSecretStrength("abababababababababababab");
  EXPECT_EQ(repetitive.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(repetitive.message().find("only 2 different characters, fewer than the 8"),
            std::string::npos)
      << repetitive.message();
  EXPECT_EQ(CheckSecretStrength("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSecretStrength("1234567").code(), StatusCode::kInvalidArgument);

  // The launcher's own kind (32 hex digits from /dev/urandom) and the shortest acceptable.
  EXPECT_TRUE(CheckSecretStrength("0f3a9c27d41e8b5609ce72a1d3b4f580").ok());
  EXPECT_TRUE(CheckSecretStrength("0123456701234567").ok());
}

class SecuredRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigureSocket(router_);
    SecureBindSide(router_, "job-secret");
    LimitIncoming(router_, 4096, kControlReceiveQueue);
    auto ep = BindSocket(router_, "tcp://127.0.0.1:0");
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    endpoint_ = *ep;
  }

  // The next payload the router receives within `within`, or "" if none.
  std::string Receive(milliseconds within = milliseconds(20000)) {
    zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, within) <= 0) return "";
    zmq::message_t identity, payload;
    (void)router_.recv(identity);
    (void)router_.recv(payload);
    return payload.to_string();
  }

  // A peer with the secret connects and sends; the router receives it (the router goes on).
  void ExpectAMemberGetsThrough() {
    zmq::socket_t member(context_, zmq::socket_type::dealer);
    ConfigureSocket(member);
    SecureConnectSide(member, "job-secret");
    member.connect(endpoint_);
    member.send(zmq::buffer(std::string("member")), zmq::send_flags::none);
    EXPECT_EQ(Receive(), "member");
  }

  zmq::context_t context_;
  zmq::socket_t router_{context_, zmq::socket_type::router};
  std::string endpoint_;
};

// Strangers are refused in the handshake, so nothing of theirs reaches the router; a peer with
// the secret, connecting after them, is received first.
TEST_F(SecuredRouterTest, OnlyAPeerWithTheSecretGetsAMessageThrough) {
  EXPECT_EQ(ConnectAndSend(context_, endpoint_, "", "no secret"), Handshake::kFailed);
  EXPECT_EQ(ConnectAndSend(context_, endpoint_, "wrong-secret", "wrong secret"),
            Handshake::kFailed);
  ASSERT_TRUE(testing::SendRawTcp(endpoint_, testing::HttpHealthCheck()));
  ASSERT_TRUE(testing::SendRawTcp(endpoint_, std::string(300, '\xff')));

  ExpectAMemberGetsThrough();
}

// ZeroMQ drops the connection of a peer whose frame is over the bound before reading it whole;
// the receiver goes on with its other peers.
TEST_F(SecuredRouterTest, AnOversizedFrameDropsItsConnectionNotTheReceiver) {
  zmq::socket_t big(context_, zmq::socket_type::dealer);
  ConfigureSocket(big);
  SecureConnectSide(big, "job-secret");
  testing::SocketEvents events(context_, big);
  big.connect(endpoint_);
  ASSERT_EQ(events.Next(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  big.send(zmq::buffer(std::string(8192, 'x')), zmq::send_flags::none);
  EXPECT_EQ(events.Next(), ZMQ_EVENT_DISCONNECTED);

  ExpectAMemberGetsThrough();
}

// A connection that never completes its handshake (a port scanner, a half-open stranger) is
// closed by the receiver once kHandshakeTimeoutMs has passed, not held as long as it stays.
TEST_F(SecuredRouterTest, AConnectionThatNeverHandshakesIsClosedAfterTheTimeout) {
  EXPECT_EQ(router_.get(zmq::sockopt::handshake_ivl), kHandshakeTimeoutMs);
  const auto start = std::chrono::steady_clock::now();
  const auto held =
      testing::HoldRawTcpUntilClosed(endpoint_, milliseconds(kHandshakeTimeoutMs * 3));
  ASSERT_TRUE(held.has_value()) << "the connection was not closed within 3 time-outs";
  EXPECT_GE(*held, milliseconds(kHandshakeTimeoutMs / 2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(kHandshakeTimeoutMs * 3));
  ExpectAMemberGetsThrough();  // the receiver goes on
}

// A socket that talks to the coordinator refuses what no coordinator sends: a frame over
// kMaxControlMessageBytes drops the connection before it is read whole (and ZeroMQ does not
// reconnect after such a protocol error); a frame within the bound gets through.
TEST(ControlSocketTest, RefusesFramesOverTheControlBound) {
  zmq::context_t context;
  zmq::socket_t coordinator(context, zmq::socket_type::router);
  ConfigureSocket(coordinator);
  SecureBindSide(coordinator, "job-secret");
  auto ep = BindSocket(coordinator, "tcp://127.0.0.1:0");
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  // Each worker says hello, and the coordinator answers it with `answer_bytes`.
  auto answer_hello = [&](zmq::socket_t& worker, size_t answer_bytes) {
    worker.send(zmq::buffer(std::string("hello")), zmq::send_flags::none);
    zmq::pollitem_t item{coordinator.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, milliseconds(20000)), 1);
    zmq::message_t identity, payload;
    ASSERT_TRUE(coordinator.recv(identity));
    ASSERT_TRUE(coordinator.recv(payload));
    coordinator.send(identity, zmq::send_flags::sndmore);
    coordinator.send(zmq::buffer(std::string(answer_bytes, 'x')), zmq::send_flags::none);
  };
  for (const size_t bytes : {static_cast<size_t>(kMaxControlMessageBytes) + 1,
                             static_cast<size_t>(kMaxControlMessageBytes) - 64}) {
    zmq::socket_t worker(context, zmq::socket_type::dealer);
    ConfigureControlSocket(worker);
    SecureConnectSide(worker, "job-secret");
    EXPECT_EQ(worker.get(zmq::sockopt::maxmsgsize), kMaxControlMessageBytes);
    testing::SocketEvents events(context, worker);
    worker.connect(*ep);
    ASSERT_EQ(events.Next(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    answer_hello(worker, bytes);
    if (bytes > static_cast<size_t>(kMaxControlMessageBytes)) {
      EXPECT_EQ(events.Next(), ZMQ_EVENT_DISCONNECTED);
      continue;
    }
    zmq::pollitem_t in{worker.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&in, 1, milliseconds(20000)), 1);
    zmq::message_t answer;
    ASSERT_TRUE(worker.recv(answer));
    EXPECT_EQ(answer.size(), bytes);
  }
}

TEST(LogThrottleTest, LetsABurstThroughPerPeriodAndCountsTheRest) {
  LogThrottle throttle(3, std::chrono::seconds(10));
  const auto t0 = LogThrottle::Clock::now();
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) allowed += throttle.Allow(t0) ? 1 : 0;
  EXPECT_EQ(allowed, 3);
  EXPECT_EQ(throttle.total(), 1000u);
  EXPECT_EQ(throttle.TakeSuppressedNote(), " (997 similar lines suppressed)");
  EXPECT_EQ(throttle.TakeSuppressedNote(), "");
  EXPECT_TRUE(throttle.Allow(t0 + std::chrono::seconds(11)));
}

}  // namespace
}  // namespace tessera
