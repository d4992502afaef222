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

  zmq::socket_t member(context_, zmq::socket_type::dealer);
  ConfigureSocket(member);
  SecureConnectSide(member, "job-secret");
  member.connect(endpoint_);
  member.send(zmq::buffer(std::string("member")), zmq::send_flags::none);
  EXPECT_EQ(Receive(), "member");
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

  zmq::socket_t member(context_, zmq::socket_type::dealer);
  ConfigureSocket(member);
  SecureConnectSide(member, "job-secret");
  member.connect(endpoint_);
  member.send(zmq::buffer(std::string("member")), zmq::send_flags::none);
  EXPECT_EQ(Receive(), "member");
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
