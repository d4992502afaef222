// The peer mesh's connections under faults (runtime/src/distributed/peer_mesh.h): worker 0
// reaches worker 1's inbox through a TCP relay (tests/support/tcp_relay.h) that stalls the stream
// mid-message, as a starved or stopped sender does, or cuts it. A stall longer than ZeroMQ's
// heartbeat timeout must not lose the message; a cut must fail the waiting worker naming the
// peer, never leave it waiting; a peer that leaves the program is no failure.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "distributed/peer_mesh.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/security.h"
#include "tests/support/tcp_relay.h"

namespace tessera::internal {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kTag = 9;
constexpr char kSecret[] = "link-secret";

// Answers the workers' peer announcements as the coordinator does, but lists worker 1's inbox at
// the relay, so that worker 0's connection to it goes through the relay.
class FakeCoordinator {
 public:
  explicit FakeCoordinator(zmq::context_t& zmq) : socket_(zmq, zmq::socket_type::router) {
    ConfigureSocket(socket_);
    SecureBindSide(socket_, kSecret);
    endpoint_ = BindSocket(socket_, "tcp://127.0.0.1:0").value();
  }
  const std::string& endpoint() const { return endpoint_; }

  // Reads both announcements and answers them; worker 1 is listed at `relay`.
  void Introduce() {
    std::vector<std::string> identities(2), endpoints(2);
    std::vector<uint64_t> request_ids(2);
    for (int i = 0; i < 2; ++i) {
      zmq::message_t identity, frame;
      ASSERT_TRUE(socket_.recv(identity));
      ASSERT_TRUE(socket_.recv(frame));
      auto msg = IncomingMessage::Parse(std::move(frame));
      ASSERT_TRUE(msg.ok()) << msg.status().ToString();
      auto a = (*msg)->envelope().getBody().getAnnouncePeer();
      const uint32_t rank = a.getRank();
      ASSERT_LT(rank, 2u);
      identities[rank] = identity.to_string();
      request_ids[rank] = (*msg)->envelope().getRequestId();
      endpoints[rank] = a.getEndpoint();
    }
    ready_.set_value(std::stoi(endpoints[1].substr(endpoints[1].rfind(':') + 1)));
    endpoints[1] = relay_.get_future().get();
    for (int r = 0; r < 2; ++r) {
      OutgoingMessage reply(0, request_ids[r]);
      auto list = reply.envelope().getBody().initPeerList().initEndpoints(2);
      for (unsigned i = 0; i < 2; ++i) list.set(i, endpoints[i]);
      socket_.send(zmq::buffer(identities[r]), zmq::send_flags::sndmore);
      socket_.send(reply.ToFrame(), zmq::send_flags::none);
    }
  }

  std::promise<int> ready_;          // worker 1's real inbox port
  std::promise<std::string> relay_;  // where worker 0 is to reach it

 private:
  zmq::socket_t socket_;
  std::string endpoint_;
};

class PeerMeshLinkTest : public ::testing::Test {
 protected:
  void SetUp() override { ConnectPair(); }

  // Connects worker 0 and worker 1, worker 0 reaching worker 1 through relay_.
  void ConnectPair() {
    meshes_.clear();
    FakeCoordinator coordinator(zmq_);
    std::thread introducer([&] { coordinator.Introduce(); });
    std::vector<std::future<Result<std::unique_ptr<PeerMesh>>>> pending;
    for (int r = 0; r < 2; ++r) {
      pending.push_back(std::async(std::launch::async, [this, &coordinator, r] {
        PeerMeshOptions o;
        o.rank = r;
        o.num_workers = 2;
        o.coordinator = coordinator.endpoint();
        o.secret = kSecret;
        o.timeout = std::chrono::seconds(30);
        o.leaving_grace = milliseconds(200);
        return PeerMesh::Connect(o, zmq_);
      }));
    }
    relay_ = std::make_unique<testing::TcpRelay>(coordinator.ready_.get_future().get());
    coordinator.relay_.set_value(relay_->endpoint());
    introducer.join();
    for (auto& p : pending) {
      auto m = p.get();
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      meshes_.push_back(std::move(m).value());
    }
  }

  // Worker 0 sends worker 1 `bytes` bytes for (kTag, step), stalled by the relay after 1 MiB.
  void SendStalled(size_t bytes, int64_t step) {
    relay_->StallAt(relay_->forwarded() + (1 << 20));
    OutgoingMessage msg(0, 0, static_cast<unsigned>(bytes / 8 + 16));
    auto peer = msg.envelope().getBody().initPeer();
    peer.setTag(kTag);
    peer.setStep(step);
    payload_ = std::string(bytes, 'x');
    for (size_t i = 0; i < bytes; i += 4096) payload_[i] = static_cast<char>('a' + i / 4096 % 26);
    peer.setPayload(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload_.data()), payload_.size()));
    ASSERT_TRUE(meshes_[0]->Send(1, msg).ok());
    relay_->AwaitStalled();
  }

  zmq::context_t zmq_;
  std::unique_ptr<testing::TcpRelay> relay_;
  std::vector<std::unique_ptr<PeerMesh>> meshes_;
  std::string payload_;
};

// The hang this guards against: ZeroMQ's heartbeat (a PING every second, the connection dropped 5
// s after one with no whole message back) cut a connection whose sender was stalled mid-message,
// and the message was lost with it. Stalled for 7 s, the message still arrives whole.
TEST_F(PeerMeshLinkTest, AMessageStalledLongerThanAHeartbeatTimeoutArrivesWhole) {
  ASSERT_EQ(meshes_.size(), 2u);
  SendStalled(8 << 20, 0);
  // The fault itself: the sender makes no progress for longer than the old heartbeat timeout.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  relay_->Resume();
  auto msg = meshes_[1]->Receive(0, kTag, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  auto got = (*msg)->envelope().getBody().getPeer().getPayload();
  ASSERT_EQ(got.size(), payload_.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), payload_.begin()));
}

// A connection cut mid-message (the relay resets it; ZeroMQ reconnects by itself) fails the
// worker waiting for that message at once, naming the sender, instead of after the timeout.
TEST_F(PeerMeshLinkTest, ACutConnectionFailsTheReceiverNamingTheSender) {
  ASSERT_EQ(meshes_.size(), 2u);
  SendStalled(8 << 20, 0);
  relay_->Cut();
  auto msg = meshes_[1]->Receive(0, kTag, 0);
  ASSERT_FALSE(msg.ok());
  EXPECT_EQ(msg.status().code(), StatusCode::kUnavailable);
  const std::string text = msg.status().message();
  EXPECT_NE(text.find("connection from worker 0 to this worker's inbox"), std::string::npos)
      << text;
  EXPECT_NE(text.find("was lost"), std::string::npos) << text;
  EXPECT_EQ(text.find("sent nothing"), std::string::npos) << text;  // not the time-out
}

// The sender's side of the same cut: once the grace for a leaving message has passed, its next
// wait fails, naming the peer whose inbox it lost.
TEST_F(PeerMeshLinkTest, ACutConnectionFailsTheSenderNamingTheReceiver) {
  ASSERT_EQ(meshes_.size(), 2u);
  SendStalled(8 << 20, 0);
  relay_->Cut();
  auto msg = meshes_[0]->Receive(1, kTag, 0);  // worker 1 sends nothing: only the loss can end it
  ASSERT_FALSE(msg.ok());
  EXPECT_EQ(msg.status().code(), StatusCode::kUnavailable);
  const std::string text = msg.status().message();
  EXPECT_NE(text.find("connection from this worker to worker 1's inbox"), std::string::npos)
      << text;
  EXPECT_NE(text.find("did not announce leaving"), std::string::npos) << text;
}

// A peer that leaves the program closes its connections: no failure, only the usual Aborted of a
// wait for a peer that left.
TEST_F(PeerMeshLinkTest, APeerThatLeavesIsNotALostConnection) {
  ASSERT_EQ(meshes_.size(), 2u);
  for (int leaver : {0, 1}) {
    SCOPED_TRACE(leaver);
    const int stayer = 1 - leaver;
    ASSERT_TRUE(meshes_[leaver]->AnnounceLeaving().ok());
    meshes_[leaver].reset();
    auto msg = meshes_[stayer]->Receive(leaver, kTag, 0);
    ASSERT_FALSE(msg.ok());
    EXPECT_EQ(msg.status().code(), StatusCode::kAborted) << msg.status().ToString();
    EXPECT_NE(msg.status().message().find("left the program"), std::string::npos);
    if (leaver == 0) ConnectPair();  // a fresh pair for the other direction
  }
}

}  // namespace
}  // namespace tessera::internal
