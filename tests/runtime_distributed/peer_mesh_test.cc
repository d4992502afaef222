// The peer mesh between workers (runtime/src/distributed/peer_mesh.h) with a real coordinator in
// this process: introductions, matching of (sender, tag, step) whatever the arrival order,
// all-gather, clear errors for bad announcements and silent peers, and garbage dropped.
#include "distributed/peer_mesh.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tessera/server/coordinator.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/parts.h"
#include "tessera/transport/security.h"
#include "tests/support/log_capture.h"
#include "tests/support/stranger.h"

namespace tessera::internal {
namespace {

class PeerMeshTest : public ::testing::Test {
 protected:
  void StartCoordinator(int workers) {
    CoordinatorOptions co;
    co.listen = "tcp://127.0.0.1:0";
    co.num_servers = 1;  // none start: the mesh does not need the servers
    co.num_workers = workers;
    co.secret = secret_;
    coordinator_ = std::make_unique<Coordinator>(co, zmq_);
    ASSERT_TRUE(coordinator_->Start().ok());
  }

  PeerMeshOptions Options(int rank, int workers) {
    PeerMeshOptions o;
    o.rank = rank;
    o.num_workers = workers;
    o.coordinator = coordinator_->endpoint();
    o.secret = secret_;
    o.timeout = std::chrono::seconds(20);
    return o;
  }

  // Connects `workers` meshes concurrently (each blocks until all have announced), with
  // adjust(rank, options) changing each one's options first.
  std::vector<std::unique_ptr<PeerMesh>> ConnectAll(
      int workers, const std::function<void(int, PeerMeshOptions&)>& adjust = {}) {
    std::vector<std::future<Result<std::unique_ptr<PeerMesh>>>> pending;
    for (int r = 0; r < workers; ++r) {
      pending.push_back(std::async(std::launch::async, [this, r, workers, &adjust] {
        PeerMeshOptions o = Options(r, workers);
        if (adjust) adjust(r, o);
        return PeerMesh::Connect(o, zmq_);
      }));
    }
    std::vector<std::unique_ptr<PeerMesh>> meshes;
    for (auto& p : pending) {
      auto m = p.get();
      EXPECT_TRUE(m.ok()) << m.status().ToString();
      meshes.push_back(m.ok() ? std::move(m).value() : nullptr);
    }
    return meshes;
  }

  static void SendStep(PeerMesh& from, int to, uint64_t tag, int64_t step,
                       const std::string& text) {
    OutgoingMessage msg(static_cast<uint32_t>(from.rank()), 0);
    auto peer = msg.envelope().getBody().initPeer();
    peer.setTag(tag);
    peer.setStep(step);
    peer.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(text.data()), text.size()));
    ASSERT_TRUE(from.Send(to, msg).ok());
  }

  static std::string PayloadOf(const IncomingMessage& msg) {
    auto p = msg.envelope().getBody().getPeer().getPayload();
    return std::string(reinterpret_cast<const char*>(p.begin()), p.size());
  }

  // A message of worker `from` for (tag, step) carrying `text`, encoded.
  static std::string PeerBytes(uint32_t from, uint64_t tag, int64_t step, const std::string& text) {
    OutgoingMessage msg(from, 0);
    auto peer = msg.envelope().getBody().initPeer();
    peer.setTag(tag);
    peer.setStep(step);
    peer.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(text.data()), text.size()));
    const zmq::message_t frame = msg.ToFrame();
    return std::string(static_cast<const char*>(frame.data()), frame.size());
  }

  // Sends one frame of `bytes` bytes (not split: no worker of the job sends such a frame) to
  // `mesh`'s inbox from a new connection holding the test's secret, after `first` (a message, if
  // not empty); returns once this side saw the connection closed.
  void SendOneFrameOf(const PeerMesh& mesh, size_t bytes, const std::string& first = "") {
    zmq::socket_t raw(zmq_, zmq::socket_type::push);
    ConfigureSocket(raw);
    SecureConnectSide(raw, secret_);
    testing::SocketEvents events(zmq_, raw);
    raw.connect(mesh.endpoint());
    ASSERT_EQ(events.Next(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    if (!first.empty()) raw.send(zmq::buffer(first), zmq::send_flags::none);
    raw.send(zmq::message_t(bytes), zmq::send_flags::none);
    EXPECT_EQ(events.Next(), ZMQ_EVENT_DISCONNECTED);
  }

  testing::LogCapture log_;  // first: the meshes' loggers copy its sink
  std::string secret_ = "s3cret";
  zmq::context_t zmq_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(PeerMeshTest, MessagesMatchBySenderTagAndStepWhateverTheirOrder) {
  StartCoordinator(3);
  auto meshes = ConnectAll(3);
  ASSERT_EQ(meshes.size(), 3u);
  // Worker 1 and 2 send steps out of order and for two exchanges; worker 0 asks in its order.
  SendStep(*meshes[2], 0, 7, 1, "w2-t7-s1");
  SendStep(*meshes[1], 0, 8, 0, "w1-t8-s0");
  SendStep(*meshes[2], 0, 7, 0, "w2-t7-s0");
  SendStep(*meshes[1], 0, 7, 0, "w1-t7-s0");
  for (auto [from, tag, step, want] :
       std::vector<std::tuple<int, uint64_t, int64_t, std::string>>{{1, 7, 0, "w1-t7-s0"},
                                                                    {2, 7, 0, "w2-t7-s0"},
                                                                    {2, 7, 1, "w2-t7-s1"},
                                                                    {1, 8, 0, "w1-t8-s0"}}) {
    auto msg = meshes[0]->Receive(from, tag, step);
    ASSERT_TRUE(msg.ok()) << msg.status().ToString();
    EXPECT_EQ(PayloadOf(**msg), want);
  }
}

TEST_F(PeerMeshTest, AllGatherReturnsEveryWorkersBytesInRankOrder) {
  StartCoordinator(3);
  auto meshes = ConnectAll(3);
  std::vector<std::future<Result<std::vector<std::string>>>> gathered;
  for (int r = 0; r < 3; ++r) {
    gathered.push_back(std::async(std::launch::async, [&meshes, r] {
      return meshes[r]->AllGather(
          42, std::string(static_cast<size_t>(r) * 1000 + 1, static_cast<char>('a' + r)));
    }));
  }
  for (auto& g : gathered) {
    auto all = g.get();
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(all->size(), 3u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ((*all)[r],
                std::string(static_cast<size_t>(r) * 1000 + 1, static_cast<char>('a' + r)));
    }
  }
}

// Round r's message from worker s to worker t: its size (some empty, some over a frame's part)
// and its bytes.
size_t RoundBytes(int s, int t, int r) {
  return (r + s + t) % 5 == 0 ? 0 : static_cast<size_t>((r * 7919 + s * 131 + t * 17) % 70000);
}
char RoundByte(int s, int t, int r, size_t i) {
  return static_cast<char>((i * 31 + static_cast<size_t>(r * 7 + s * 3 + t)) & 0xff);
}

// Every worker runs `rounds` rounds with `in_flight` ahead; round r's message from s to t holds
// RoundBytes(s, t, r) bytes of RoundByte. Returns each worker's status, and in (*reads)[t] the
// rounds it read in the order it read them.
std::vector<Status> RunRounds(std::vector<std::unique_ptr<PeerMesh>>& meshes, int rounds,
                              int in_flight, std::vector<std::vector<int>>* reads,
                              int liar = -1) {
  const int W = static_cast<int>(meshes.size());
  reads->assign(static_cast<size_t>(W), {});
  std::vector<std::future<Status>> done;
  for (int t = 0; t < W; ++t) {
    done.push_back(std::async(std::launch::async, [&, t] {
      RoundsSpec spec;
      spec.rounds = rounds;
      // The liar sends one byte more to every worker in round 3.
      spec.bytes_to = [&](int r, int w) { return RoundBytes(t, w, r) + (t == liar && r == 3); };
      spec.bytes_from = [&](int r, int w) { return RoundBytes(w, t, r); };
      spec.write = [&](int r, const std::vector<char*>& to) {
        for (int w = 0; w < W; ++w) {
          if (w == t) {
            EXPECT_EQ(to[w], nullptr);
            continue;
          }
          for (size_t i = 0; i < spec.bytes_to(r, w); ++i) to[w][i] = RoundByte(t, w, r, i);
        }
        return Status::Ok();
      };
      spec.read = [&](int r, const std::vector<std::span<const char>>& from) {
        (*reads)[t].push_back(r);
        for (int w = 0; w < W; ++w) {
          if (w == t) {
            EXPECT_TRUE(from[w].empty());
            continue;
          }
          EXPECT_EQ(from[w].size(), RoundBytes(w, t, r));
          for (size_t i = 0; i < from[w].size(); ++i) {
            if (from[w][i] != RoundByte(w, t, r, i)) {
              return Status::Internal(fmt::format("round {} from {} differs at byte {}", r, w, i));
            }
          }
        }
        return Status::Ok();
      };
      return meshes[t]->ExchangeRounds(77, spec, in_flight);
    }));
  }
  std::vector<Status> out;
  for (auto& d : done) out.push_back(d.get());
  return out;
}

TEST_F(PeerMeshTest, RoundsArriveWholeAndAreReadInOrderWhateverIsInFlight) {
  StartCoordinator(3);
  auto meshes = ConnectAll(3);
  // Several exchanges on the same mesh: tags keep them apart (each call uses tag 77 after the
  // last has ended, as the executor's calls use fresh tags).
  for (int in_flight : {1, 3, kRoundsInFlight, 100}) {
    SCOPED_TRACE(in_flight);
    std::vector<std::vector<int>> reads;
    const std::vector<Status> status = RunRounds(meshes, 25, in_flight, &reads);
    std::vector<int> in_order(25);
    for (int r = 0; r < 25; ++r) in_order[r] = r;
    for (int t = 0; t < 3; ++t) {
      EXPECT_TRUE(status[t].ok()) << status[t].ToString();
      EXPECT_EQ(reads[t], in_order);
    }
  }
}

// Workers of one host hand rounds over in shared memory (round_slots.h) when at most half the
// slots are in flight; rounds larger than a slot, and every round with more in flight, go in
// their messages. The bytes on the mesh tell which.
TEST_F(PeerMeshTest, RoundsBetweenWorkersOfOneHostGoThroughSharedSlots) {
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  for (int t = 0; t < 2; ++t) {
    EXPECT_TRUE(meshes[t]->slots_to(1 - t));
    EXPECT_TRUE(meshes[t]->slots_from(1 - t));
  }
  // Every round 300 KB, but round 2 of 1.5 MB (over a slot).
  auto run = [&](int in_flight, std::vector<uint64_t>* sent) {
    std::vector<std::future<Status>> done;
    for (int t = 0; t < 2; ++t) {
      done.push_back(std::async(std::launch::async, [&, t] {
        const uint64_t before = meshes[t]->bytes_sent();
        RoundsSpec spec;
        spec.rounds = 9;
        auto bytes = [](int r) -> size_t { return r == 2 ? 1500000 : 300000; };
        spec.bytes_to = [&](int r, int) { return bytes(r); };
        spec.bytes_from = [&](int r, int) { return bytes(r); };
        spec.write = [&](int r, const std::vector<char*>& to) {
          for (size_t i = 0; i < bytes(r); ++i) to[1 - t][i] = RoundByte(t, 1 - t, r, i);
          return Status::Ok();
        };
        spec.read = [&](int r, const std::vector<std::span<const char>>& from) {
          for (size_t i = 0; i < from[1 - t].size(); ++i) {
            if (from[1 - t][i] != RoundByte(1 - t, t, r, i)) {
              return Status::Internal(fmt::format("round {} differs at byte {}", r, i));
            }
          }
          return Status::Ok();
        };
        Status s = meshes[t]->ExchangeRounds(78, spec, in_flight);
        (*sent)[t] = meshes[t]->bytes_sent() - before;
        return s;
      }));
    }
    for (auto& d : done) EXPECT_TRUE(d.get().ok());
  };
  std::vector<uint64_t> sent(2);
  run(RoundSlots::kSlots / 2, &sent);
  for (int t = 0; t < 2; ++t) {
    EXPECT_GT(sent[t], 1500000u) << "round 2 goes in its message";
    EXPECT_LT(sent[t], 1600000u) << "the other rounds go in slots";
  }
  run(RoundSlots::kSlots / 2 + 1, &sent);
  for (int t = 0; t < 2; ++t) EXPECT_GT(sent[t], 1500000u + 8 * 300000u);
}

// A round posted in a slot claiming more bytes than a slot holds, or other bytes than the
// exchange expects, fails the exchange with DataLoss naming the sender; nothing of it is read.
TEST_F(PeerMeshTest, ARoundPostedWithTheWrongSizeFailsTheExchangeNamingItsSender) {
  for (const uint64_t bytes : {uint64_t{RoundSlots::kSlotBytes + 1}, uint64_t{20}}) {
    SCOPED_TRACE(bytes);
    StartCoordinator(2);
    auto meshes = ConnectAll(2);
    ASSERT_TRUE(meshes[0]->slots_from(1));
    // What worker 1 would post for its first round to worker 0, were it broken.
    meshes[1]->round_slots_for_testing().Post(0, 0, bytes);
    RoundsSpec spec;
    spec.rounds = 1;
    spec.bytes_to = [](int, int) { return size_t{10}; };
    spec.bytes_from = [](int, int) { return size_t{10}; };
    spec.write = [](int, const std::vector<char*>&) { return Status::Ok(); };
    bool read = false;
    spec.read = [&read](int, const std::vector<std::span<const char>>&) {
      read = true;
      return Status::Ok();
    };
    const Status s = meshes[0]->ExchangeRounds(79, spec);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("worker 1"), std::string::npos) << s.ToString();
    EXPECT_FALSE(read);
    meshes.clear();
    coordinator_.reset();
  }
}

// A peer sharing slots that never posts its round is reported by rank after the timeout; one
// whose connection drops, or that left the program, fails the wait at once.
TEST_F(PeerMeshTest, APeerThatDoesNotPostItsRoundFailsTheExchangeSayingWhy) {
  RoundsSpec spec;
  spec.rounds = 1;
  spec.bytes_to = [](int, int) { return size_t{10}; };
  spec.bytes_from = [](int, int) { return size_t{10}; };
  spec.write = [](int, const std::vector<char*>&) { return Status::Ok(); };
  spec.read = [](int, const std::vector<std::span<const char>>&) { return Status::Ok(); };
  {
    SCOPED_TRACE("silent");
    StartCoordinator(2);
    auto meshes =
        ConnectAll(2, [](int, PeerMeshOptions& o) { o.timeout = std::chrono::milliseconds(300); });
    ASSERT_TRUE(meshes[0]->slots_from(1));
    const Status s = meshes[0]->ExchangeRounds(80, spec);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("worker 1 posted nothing"), std::string::npos) << s.ToString();
    meshes.clear();
    coordinator_.reset();
  }
  {
    SCOPED_TRACE("lost");
    StartCoordinator(2);
    auto meshes = ConnectAll(2);
    ASSERT_TRUE(meshes[0]->slots_from(1));
    meshes[1].reset();  // closes its sockets without announcing that it leaves
    const auto start = std::chrono::steady_clock::now();
    const Status s = meshes[0]->ExchangeRounds(81, spec);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("worker 1"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("was lost"), std::string::npos) << s.ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
        << "not the 20 s timeout";
    meshes.clear();
    coordinator_.reset();
  }
  {
    SCOPED_TRACE("left");
    StartCoordinator(2);
    auto meshes = ConnectAll(2);
    ASSERT_TRUE(meshes[1]->AnnounceLeaving().ok());
    const Status s = meshes[0]->ExchangeRounds(82, spec);
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
    EXPECT_NE(s.message().find("worker 1 left the program"), std::string::npos) << s.ToString();
  }
}

TEST_F(PeerMeshTest, ARoundOfTheWrongSizeFailsTheExchangeNamingItsSender) {
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  std::vector<std::vector<int>> reads;
  // Every round in flight: worker 0 has sent all of its rounds before it reads the bad one.
  const std::vector<Status> status = RunRounds(meshes, 6, /*in_flight=*/6, &reads, /*liar=*/1);
  EXPECT_TRUE(status[1].ok()) << status[1].ToString();  // worker 0 told no lie
  ASSERT_FALSE(status[0].ok());
  EXPECT_EQ(status[0].code(), StatusCode::kDataLoss);
  EXPECT_NE(status[0].message().find("worker 1 sent"), std::string::npos) << status[0].ToString();
  EXPECT_NE(status[0].message().find("round 3"), std::string::npos) << status[0].ToString();
  EXPECT_EQ(reads[0], (std::vector<int>{0, 1, 2}));  // nothing of the bad round was read
}

TEST_F(PeerMeshTest, ASilentPeerIsReportedByRankAfterTheTimeout) {
  StartCoordinator(2);
  std::vector<std::future<Result<std::unique_ptr<PeerMesh>>>> pending;
  for (int r = 0; r < 2; ++r) {
    pending.push_back(std::async(std::launch::async, [this, r] {
      PeerMeshOptions po = Options(r, 2);
      po.timeout = std::chrono::milliseconds(300);
      return PeerMesh::Connect(po, zmq_);
    }));
  }
  auto a = pending[0].get();
  auto b = pending[1].get();
  ASSERT_TRUE(a.ok() && b.ok());
  auto msg = (*a)->Receive(1, 1, 0);
  ASSERT_FALSE(msg.ok());
  EXPECT_EQ(msg.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(msg.status().message().find("worker 1"), std::string::npos) << msg.status().ToString();
}

// What a connected peer sends that is not a PeerMessage of another worker is dropped and counted;
// the receiver goes on and gets the real message that follows.
TEST_F(PeerMeshTest, GarbageOnTheInboxIsDroppedNotAnError) {
  StartCoordinator(3);
  auto meshes = ConnectAll(3);
  OutgoingMessage wrong(1, 0);  // a well-formed envelope that is not a PeerMessage
  wrong.envelope().getBody().initBarrier().setId(3);
  ASSERT_TRUE(meshes[1]->Send(0, wrong).ok());
  ASSERT_TRUE(meshes[1]->SendFrame(0, zmq::message_t(std::string("GET / HTTP/1.1\r\n\r\n"))).ok());
  ASSERT_TRUE(meshes[1]->SendFrame(0, zmq::message_t(std::string(64, '\xff'))).ok());
  OutgoingMessage self(0, 0);  // claims to come from the receiver itself
  self.envelope().getBody().initPeer().setTag(1);
  ASSERT_TRUE(meshes[1]->Send(0, self).ok());
  SendStep(*meshes[1], 0, 1, 0, "first");
  SendStep(*meshes[2], 0, 1, 0, "from 2");
  SendStep(*meshes[1], 0, 1, 1, "second");
  auto a = meshes[0]->Receive(1, 1, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(PayloadOf(**a), "first");
  auto from2 = meshes[0]->Receive(2, 1, 0);
  ASSERT_TRUE(from2.ok()) << from2.status().ToString();
  EXPECT_EQ(PayloadOf(**from2), "from 2");
  auto b = meshes[0]->Receive(1, 1, 1);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(PayloadOf(**b), "second");
  EXPECT_EQ(meshes[0]->dropped(), 4u);
}

// A peer that sends messages nobody asks for (distinct exchanges, never received) gets at most
// kMaxHeldPerPeer of them held; the rest are dropped and counted: the receiver's memory does not
// grow with what a peer sends unasked. A message taken makes room for the next.
TEST_F(PeerMeshTest, MessagesNotAskedForAreHeldUpToABound) {
  StartCoordinator(2);
  std::vector<std::future<Result<std::unique_ptr<PeerMesh>>>> pending;
  for (int r = 0; r < 2; ++r) {
    pending.push_back(std::async(std::launch::async, [this, r] {
      PeerMeshOptions po = Options(r, 2);
      po.timeout = std::chrono::seconds(2);  // how long the dropped message is waited for
      return PeerMesh::Connect(po, zmq_);
    }));
  }
  auto receiver = pending[0].get();
  auto sender = pending[1].get();
  ASSERT_TRUE(receiver.ok() && sender.ok());
  const int unasked = static_cast<int>(kMaxHeldPerPeer) + 10;
  for (int i = 0; i < unasked; ++i) SendStep(**sender, 0, 1000 + i, 0, std::to_string(i));
  // The last one came after the bound: read and dropped, so it never arrives.
  auto dropped = (*receiver)->Receive(1, 1000 + unasked - 1, 0);
  EXPECT_EQ(dropped.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ((*receiver)->dropped(), 10u);
  auto first = (*receiver)->Receive(1, 1000, 0);  // held
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(PayloadOf(**first), "0");
  SendStep(**sender, 0, 5, 0, "wanted");  // fits in the room the first one left
  auto wanted = (*receiver)->Receive(1, 5, 0);
  ASSERT_TRUE(wanted.ok()) << wanted.status().ToString();
  EXPECT_EQ(PayloadOf(**wanted), "wanted");
  EXPECT_EQ((*receiver)->dropped(), 10u);
}

TEST_F(PeerMeshTest, TheCoordinatorRefusesBadAnnouncements) {
  StartCoordinator(2);
  zmq::socket_t raw(zmq_, zmq::socket_type::dealer);
  ConfigureSocket(raw);
  SecureConnectSide(raw, "s3cret");  // holds the CURVE keys, not the registration proof below
  raw.connect(coordinator_->endpoint());
  auto announce = [&raw](uint32_t rank, const std::string& secret) {
    OutgoingMessage msg(rank, 9);
    auto a = msg.envelope().getBody().initAnnouncePeer();
    a.setRank(rank);
    a.setEndpoint("tcp://127.0.0.1:1");
    a.setSecret(SecretProof(secret));
    raw.send(msg.ToFrame(), zmq::send_flags::none);
    zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_GT(zmq::poll(&item, 1, std::chrono::seconds(10)), 0);
    zmq::message_t frame;
    (void)raw.recv(frame, zmq::recv_flags::dontwait);
    auto parsed = IncomingMessage::Parse(std::move(frame));
    EXPECT_TRUE(parsed.ok());
    EXPECT_TRUE((*parsed)->envelope().getBody().isError());
    return (*parsed)->envelope().getBody().getError().getCode();
  };
  EXPECT_EQ(announce(0, "wrong"), proto::ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(announce(2, "s3cret"), proto::ErrorCode::OUT_OF_RANGE);
  // The refused announcements did not count: a real mesh of two still forms.
  auto meshes = ConnectAll(2);
  ASSERT_NE(meshes[0], nullptr);
  // Once complete, a late announcement is refused rather than silently changing the mesh.
  EXPECT_EQ(announce(1, "s3cret"), proto::ErrorCode::FAILED_PRECONDITION);
}

// Announcing one rank again and again holds one answer for it, not one per announcement: the
// earlier requests are answered as superseded at once, and the mesh's completion sends one peer
// list per rank (a fuzzed peer announcing thousands of times once flooded its own answer queue).
TEST_F(PeerMeshTest, RepeatedAnnouncementsHoldOneAnswerPerRank) {
  StartCoordinator(2);
  zmq::socket_t raw(zmq_, zmq::socket_type::dealer);
  ConfigureSocket(raw);
  SecureConnectSide(raw, "s3cret");
  raw.connect(coordinator_->endpoint());
  auto announce = [&raw](uint32_t rank, uint64_t request) {
    OutgoingMessage msg(rank, request);
    auto a = msg.envelope().getBody().initAnnouncePeer();
    a.setRank(rank);
    a.setEndpoint("tcp://127.0.0.1:1");
    a.setSecret(SecretProof("s3cret"));
    raw.send(msg.ToFrame(), zmq::send_flags::none);
  };
  constexpr int kRepeats = 50;
  for (int i = 0; i < kRepeats; ++i) announce(0, 100 + i);
  announce(1, 1000);
  int superseded = 0, lists = 0;
  std::set<uint64_t> listed;
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  while (superseded + lists < kRepeats + 1 && zmq::poll(&item, 1, std::chrono::seconds(10)) > 0) {
    zmq::message_t frame;
    while (raw.recv(frame, zmq::recv_flags::dontwait)) {
      auto parsed = IncomingMessage::Parse(std::move(frame));
      ASSERT_TRUE(parsed.ok());
      auto body = (*parsed)->envelope().getBody();
      if (body.isError()) {
        EXPECT_EQ(body.getError().getCode(), proto::ErrorCode::FAILED_PRECONDITION);
        ++superseded;
      } else {
        ASSERT_TRUE(body.isPeerList());
        listed.insert((*parsed)->envelope().getRequestId());
        ++lists;
      }
    }
  }
  EXPECT_EQ(superseded, kRepeats - 1);
  EXPECT_EQ(lists, 2);
  EXPECT_EQ(listed, (std::set<uint64_t>{100 + kRepeats - 1, 1000}));  // the latest of rank 0
}

// With a job secret a stranger's connection to an inbox fails its handshake: a forged message
// claiming to come from worker 1 never arrives, the real one does.
TEST_F(PeerMeshTest, AStrangerCannotSendToAnInbox) {
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  ASSERT_NE(meshes[0], nullptr);
  const std::string forged = PeerBytes(1, 5, 0, "forged");
  for (const std::string& secret : {std::string(""), std::string("wrong")}) {
    EXPECT_EQ(testing::ConnectAndSend(zmq_, meshes[0]->endpoint(), secret, forged,
                                      zmq::socket_type::push),
              testing::Handshake::kFailed);
  }
  EXPECT_TRUE(testing::SendRawTcp(meshes[0]->endpoint(), testing::HttpHealthCheck()));
  // The workers met on a unix socket, bound after the tcp endpoint without CURVE: the tcp
  // endpoint kept it.
  EXPECT_TRUE(meshes[1]->route(0).starts_with("ipc://")) << meshes[1]->route(0);
  SendStep(*meshes[1], 0, 5, 0, "real");
  auto msg = meshes[0]->Receive(1, 5, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(PayloadOf(**msg), "real");
  EXPECT_EQ(meshes[0]->dropped(), 0u);
}

// Workers on one host reach each other through unix sockets (local_inbox.h), whose directories
// are gone once the mesh is up: nobody can connect to them afterwards.
TEST_F(PeerMeshTest, WorkersOnOneHostMeetOnUnixSocketsGoneOnceTheMeshIsUp) {
  StartCoordinator(3);
  auto meshes = ConnectAll(3);
  for (int r = 0; r < 3; ++r) {
    ASSERT_NE(meshes[r], nullptr);
    const std::string local = meshes[r]->local_endpoint();
    ASSERT_TRUE(local.starts_with("ipc://")) << local;
    EXPECT_NE(local, meshes[r]->endpoint());
    EXPECT_FALSE(std::filesystem::exists(IpcDirectory(local))) << local;
    for (int from = 0; from < 3; ++from) {
      if (from != r) {
        EXPECT_EQ(meshes[from]->route(r), local) << from << " -> " << r;
      }
    }
  }
  SendStep(*meshes[2], 0, 4, 0, "two");
  SendStep(*meshes[0], 1, 4, 0, "zero");
  auto msg = meshes[0]->Receive(2, 4, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(PayloadOf(**msg), "two");
  msg = meshes[1]->Receive(0, 4, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(PayloadOf(**msg), "zero");
}

// Workers on different hosts (their HostIdentity differs), or one without a local inbox, are
// reached at their CURVE endpoints.
TEST_F(PeerMeshTest, WorkersOnOtherHostsUseTheAuthenticatedEndpoint) {
  StartCoordinator(3);
  auto meshes = ConnectAll(3, [](int r, PeerMeshOptions& o) {
    o.host = r == 0 ? "host a" : "host b";
    o.local_inbox = r != 2;
  });
  for (const auto& m : meshes) ASSERT_NE(m, nullptr);
  EXPECT_EQ(meshes[0]->route(1), meshes[1]->endpoint());  // another host
  EXPECT_EQ(meshes[1]->route(0), meshes[0]->endpoint());
  EXPECT_EQ(meshes[1]->route(2), meshes[2]->endpoint());  // no local inbox
  EXPECT_EQ(meshes[2]->local_endpoint(), "");
  EXPECT_EQ(meshes[2]->route(1), meshes[1]->local_endpoint());  // the same host
  for (const auto& m : meshes) EXPECT_TRUE(m->endpoint().starts_with("tcp://"));
  SendStep(*meshes[2], 0, 6, 0, "over tcp");
  auto msg = meshes[0]->Receive(2, 6, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(PayloadOf(**msg), "over tcp");
}

// A unix-socket connection that drops (its worker gone without leaving the program) fails the
// receiver naming the sender, as a tcp one does (peer_mesh_link_test.cc).
TEST_F(PeerMeshTest, ALostUnixSocketConnectionFailsTheReceiverNamingTheSender) {
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  ASSERT_TRUE(meshes[0] != nullptr && meshes[1] != nullptr);
  ASSERT_TRUE(meshes[0]->route(1).starts_with("ipc://"));
  meshes[1].reset();  // closes its sockets without announcing that it leaves
  auto msg = meshes[0]->Receive(1, 3, 0);
  ASSERT_FALSE(msg.ok());
  EXPECT_EQ(msg.status().code(), StatusCode::kUnavailable) << msg.status().ToString();
  EXPECT_NE(msg.status().message().find("worker 1"), std::string::npos) << msg.status().ToString();
  EXPECT_NE(msg.status().message().find("was lost"), std::string::npos) << msg.status().ToString();
}

// --insecure (no secret): anyone may connect, so nothing is authenticated (a stranger's message
// claiming to be worker 1 is taken, as documented), but garbage still never stops the receiver:
// it is dropped and the next message on the same connection is read.
TEST_F(PeerMeshTest, WithoutASecretGarbageIsStillDropped) {
  secret_ = "";
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  ASSERT_NE(meshes[0], nullptr);
  zmq::socket_t stranger(zmq_, zmq::socket_type::push);
  ConfigureSocket(stranger);
  stranger.connect(meshes[0]->endpoint());
  stranger.send(zmq::buffer(testing::HttpHealthCheck()), zmq::send_flags::none);
  stranger.send(zmq::buffer(std::string(300, '\xff')), zmq::send_flags::none);
  const std::string claimed = PeerBytes(1, 9, 0, "unauthenticated");
  stranger.send(zmq::buffer(claimed), zmq::send_flags::none);
  auto msg = meshes[0]->Receive(1, 9, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(PayloadOf(**msg), "unauthenticated");
  EXPECT_EQ(meshes[0]->dropped(), 2u);
}

// A message larger than a frame may be (kDataPartBytes) goes as several frames, each under the
// inbox's ZMQ_MAXMSGSIZE, and arrives whole: array hand-overs are not bounded by the frame bound.
TEST_F(PeerMeshTest, AMessageLargerThanAFrameArrivesWhole) {
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  ASSERT_NE(meshes[1], nullptr);
  std::string big(static_cast<size_t>(2 * kDataPartBytes + 12345), '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) >> 5);
  SendStep(*meshes[1], 0, 3, 0, big);
  auto msg = meshes[0]->Receive(1, 3, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_TRUE(PayloadOf(**msg) == big);
  EXPECT_EQ(meshes[0]->dropped(), 0u);
}

// A frame over the inbox's bound from a connection that is not a worker of the job (one holding
// the secret, or anyone under --insecure): ZeroMQ closes that connection before reading the frame
// whole; the worker logs it, naming its inbox and the bound, and its exchanges go on.
class PeerMeshBoundTest : public PeerMeshTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(PeerMeshBoundTest, AnOversizedFrameFromANonWorkerIsDroppedAndLogged) {
  secret_ = GetParam();
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  ASSERT_NE(meshes[0], nullptr);
  SendOneFrameOf(*meshes[0], static_cast<size_t>(kMaxDataFrameBytes) + 1);
  SendStep(*meshes[1], 0, 4, 0, "after");
  auto msg = meshes[0]->Receive(1, 4, 0);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(PayloadOf(**msg), "after");
  const std::string line = "peer-mesh inbox " + meshes[0]->endpoint() +
                           ": a connection that sent no hello (not a worker of this job)";
  EXPECT_TRUE(log_.WaitFor(line));
  EXPECT_EQ(log_.Count(fmt::format("over this socket's bound of {} bytes", kMaxDataFrameBytes)), 1);
}

INSTANTIATE_TEST_SUITE_P(SecretOrInsecure, PeerMeshBoundTest,
                         ::testing::Values(std::string("s3cret"), std::string("")),
                         [](const auto& info) {
                           return info.param.empty() ? "Insecure" : "Secret";
                         });

// A worker of the job whose connection ZeroMQ cuts for an oversized frame may have lost a
// message on it: the receiver fails the exchange with one error naming the worker, its inbox and
// the bound, rather than wait or go on without it.
TEST_F(PeerMeshTest, AnOversizedFrameFromAWorkerFailsTheExchangeSayingWhy) {
  StartCoordinator(2);
  auto meshes = ConnectAll(2);
  ASSERT_NE(meshes[0], nullptr);
  // The mesh's hello (its own tag and step) on a connection of "worker 1".
  const std::string hello = PeerBytes(1, ~uint64_t{0}, INT64_MIN + 1, "");
  SendOneFrameOf(*meshes[0], static_cast<size_t>(kMaxDataFrameBytes) + 1, hello);
  auto msg = meshes[0]->Receive(1, 6, 0);
  ASSERT_FALSE(msg.ok());
  EXPECT_EQ(msg.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(msg.status().message().find(fmt::format(
                "the connection from worker 1 to this worker's inbox {}", meshes[0]->endpoint())),
            std::string::npos)
      << msg.status().ToString();
  EXPECT_NE(msg.status().message().find(
                fmt::format("a frame over the inbox's bound of {} bytes", kMaxDataFrameBytes)),
            std::string::npos)
      << msg.status().ToString();
}

}  // namespace
}  // namespace tessera::internal
