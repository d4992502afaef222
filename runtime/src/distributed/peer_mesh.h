// PeerMesh: point-to-point messages between the workers of one job, for the distributed
// executor (array hand-overs, all-gathers) -- traffic that does not belong on the parameter
// servers because it goes from one worker to another.
//
// Each worker binds one PULL socket and connects one PUSH socket to every other worker; the
// coordinator introduces them (AnnouncePeer / PeerList). Messages are PeerMessage envelopes.
// ZeroMQ keeps the order of messages from one sender; Receive() matches on (sender, tag, step)
// and holds messages that arrive before they are asked for. Anything else that reaches the
// inbox (garbage, another kind of envelope, a claimed sender outside the job) is dropped with a
// rate-limited warning and never stops the worker. With a job secret, every tcp:// connection of
// the mesh is CURVE-authenticated (tessera/transport/security.h): only the job's workers get in.
// Workers on one host connect through a unix socket in a directory only their user can enter,
// without CURVE, while the mesh is built (local_inbox.h).
//
// A lost connection fails the job; it never hangs it. ZeroMQ reconnects by itself and says nothing
// of a message that was on the wire when a connection dropped, so the mesh watches its connections
// (socket monitors) and fails Receive and Send with Unavailable, naming the peer, once a
// connection of a peer that has not announced leaving drops: the connection from worker r to this
// inbox at once (the first message on every connection, a hello, tells whose it is), this
// worker's connection to r after `leaving_grace` (r's leaving message comes on another
// connection). The mesh sends no ZMTP heartbeats: ZeroMQ drops a connection on which no whole
// message arrives within the heartbeat timeout of a PING, and the PING's answer queues behind the
// message being sent, so a large hand-over to or from a starved worker was cut and lost. Whether
// a peer still runs is the job's heartbeats' business (tessera/transport/liveness.h).
//
// Thread safety: none; one thread (the one running the Context) uses a mesh.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_PEER_MESH_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_PEER_MESH_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>
#include <zmq.hpp>

#include "distributed/local_inbox.h"
#include "distributed/round_slots.h"
#include "exchange/exchange_rounds.h"
#include "tessera/common/log_throttle.h"
#include "tessera/common/status.h"
#include "tessera/transport/handshake_watch.h"
#include "tessera/transport/message.h"

namespace spdlog {
class logger;
}

namespace tessera::internal {

// Messages held from one peer before Receive asks for them (docs/security.md). A
// peer runs the same steps as this worker and waits for this worker's message of a step before
// its next exchange, so it is at most a step or two ahead: a few messages per exchange. More are
// dropped (and logged): whoever sends them is not running the program's steps.
inline constexpr size_t kMaxHeldPerPeer = 1024;

// Rounds of an ExchangeRounds a worker sends before it reads the first: the next round is written
// and on its way while this one's arrive, and the messages in flight stay few (measured in
// bench/README.md, "The current -w 2 picture": 1 to 3 were alike).
inline constexpr int kRoundsInFlight = 2;
// How long ExchangeRounds spins for a round a peer on this host has not posted yet before it
// sleeps on the post's futex, and how often it then checks the mesh's links.
inline constexpr std::chrono::microseconds kPostSpin{20};
inline constexpr std::chrono::microseconds kPostCheck{2000};

struct PeerMeshOptions {
  int rank = 0;  // this worker, 0 .. num_workers-1
  int num_workers = 1;
  std::string coordinator;  // REQUIRES: not empty when num_workers > 1
  std::string secret;       // the job secret; empty: unauthenticated (--insecure)
  // Where this worker listens, e.g. "tcp://10.0.0.5:0" (port 0: ephemeral) or "inproc://w1".
  // Default: loopback with an ephemeral port.
  std::string bind = "tcp://127.0.0.1:0";
  // With a tcp:// bind: peers on this worker's host (same HostIdentity()) connect through a
  // LocalInbox instead (local_inbox.h).
  bool local_inbox = true;
  // Where this worker runs; empty: HostIdentity(). Tests give workers different hosts.
  std::string host;
  // How long Connect and Receive wait for a peer before failing with Unavailable. Default: 10
  // minutes: a peer may legitimately be busy with a long step of its own.
  std::chrono::milliseconds timeout{600000};
  // How long after this worker's connection to a peer dropped the peer has to announce that it
  // left (it closes its inbox when it does) before the drop fails Receive and Send.
  std::chrono::milliseconds leaving_grace{10000};
};

class PeerMesh {
 public:
  // Binds, announces this worker to the coordinator, waits for every worker's endpoint and
  // connects to them. `context` must outlive the mesh.
  static Result<std::unique_ptr<PeerMesh>> Connect(const PeerMeshOptions& options,
                                                   zmq::context_t& context);
  ~PeerMesh();
  PeerMesh(const PeerMesh&) = delete;
  PeerMesh& operator=(const PeerMesh&) = delete;

  int rank() const { return options_.rank; }
  int size() const { return options_.num_workers; }
  // Where this worker's inbox listens (empty for a job of one worker).
  const std::string& endpoint() const { return endpoint_; }
  // Where it listened for peers on its host while the mesh was built (empty: nowhere).
  const std::string& local_endpoint() const { return local_.endpoint(); }
  // The endpoint this worker reached worker r's inbox at. REQUIRES: r != rank().
  const std::string& route(int r) const { return routes_[static_cast<size_t>(r)]; }
  // Whether ExchangeRounds hands rounds to worker r, and takes them from it, in shared memory.
  bool slots_to(int r) const { return slots_to_[static_cast<size_t>(r)]; }
  bool slots_from(int r) const { return slots_from_[static_cast<size_t>(r)].mapped(); }
  // This worker's round slots, for tests that post what a broken peer would.
  RoundSlots& round_slots_for_testing() { return slots_; }

  // Sends a message built on `msg` (whose body must be a PeerMessage) to worker `to`.
  // REQUIRES: to != rank(). The message may not be used afterwards.
  Status Send(int to, OutgoingMessage& msg);
  // Sends a copy of an encoded envelope (to send one message to several peers).
  Status SendCopy(int to, const zmq::message_t& frame);
  // Sends an encoded envelope (whose body must be a PeerMessage) to worker `to`.
  Status SendFrame(int to, zmq::message_t frame);
  // The message from worker `from` with this tag and step; waits up to the timeout.
  // Aborted as soon as `from` has announced that it left (it will send nothing more;
  // a peer's messages arrive in the order it sent them). REQUIRES: from != rank().
  Result<std::unique_ptr<IncomingMessage>> Receive(int from, uint64_t tag, int64_t step);
  // Tells every peer that this worker sends nothing more (its program's Context is going away),
  // so that a peer still waiting for it fails at once instead of after the timeout.
  Status AnnounceLeaving();

  // All-gather of one byte string per worker (rank order), tagged `tag`.
  Result<std::vector<std::string>> AllGather(uint64_t tag, std::string bytes);
  // All-to-all, tagged `tag`: to_each[w] goes to worker w (to_each[rank()] stays here); returns
  // what each worker sent this one, by rank.
  Result<std::vector<std::string>> AllToAll(uint64_t tag, std::vector<std::string> to_each);
  // The rounds of `spec` (exchange_rounds.h), tagged `tag` (round r is step r), sending up to
  // `in_flight` rounds ahead of the one it reads. Each round's message is written in place into
  // the frame that carries it and read in place from the one that brought it, or, between workers
  // on one host, into and from shared memory (round_slots.h).
  // REQUIRES: in_flight >= 1, the same on every worker.
  Status ExchangeRounds(uint64_t tag, const RoundsSpec& spec, int in_flight = kRoundsInFlight);

  uint64_t bytes_sent() const { return bytes_sent_; }
  // Messages dropped because they were malformed or not from another worker of the job.
  uint64_t dropped() const { return dropped_; }

 private:
  PeerMesh(const PeerMeshOptions& options, zmq::context_t& context);
  // Every other worker's step-0 payload tagged `tag`, into (*into)[rank]; `what` names the
  // exchange in errors.
  Status ReceivePayloads(uint64_t tag, const char* what, std::vector<std::string>* into);
  using Clock = std::chrono::steady_clock;

  // Watches outboxes_' connections (after they connected) and says hello on each.
  Status WatchAndGreet(zmq::context_t& context);
  // Waits for every peer's hello (see the .cc).
  Status AwaitGreetings();
  // Reads every message the inbox holds, without waiting.
  void DrainInbox();
  // Reads the connection events and the inbox; Unavailable, naming the peer, when a connection of
  // a peer that has not announced leaving dropped (see the file comment).
  Status CheckLinks();
  // Waits until the inbox or a connection event is readable, a grace ends, or `deadline` (false).
  bool WaitForTraffic(Clock::time_point deadline);
  // The post of the n-th round from worker `from` in its round slots (RoundSlots::Posted), for step
  // `step` of exchange `tag`; fails like Receive when the peer is lost, left or is silent.
  Result<uint64_t> AwaitPost(int from, uint64_t tag, int64_t step, uint64_t n);
  // Queues `frame` for worker `to`, unchecked.
  Status Push(int to, zmq::message_t frame);
  // Keeps a received message until Receive asks for it; an error says why it was not kept.
  // `fd`: the connection it came on (-1: unknown).
  Status Hold(zmq::message_t frame, int fd);
  void Drop(const Status& why);

  PeerMeshOptions options_;
  zmq::socket_t inbox_;
  std::string endpoint_;
  std::vector<zmq::socket_t> outboxes_;  // by rank; empty socket at our own rank
  LocalInbox local_;                     // after inbox_: its socket file goes first
  RoundSlots slots_;                     // this worker's round slots, in local_'s directory
  std::vector<RoundSlots> slots_from_;   // by rank: the peer's slots toward this worker
  std::vector<bool> slots_to_;           // by rank: the peer maps slots_ (its hello said so)
  // By rank: rounds of ExchangeRounds sent to and received from the peer, over every exchange.
  std::vector<uint64_t> rounds_sent_, rounds_received_;
  std::vector<std::string> routes_;      // every worker's inbox as this worker reached it, by rank
  std::map<std::tuple<int, uint64_t, int64_t>, std::unique_ptr<IncomingMessage>> held_;
  uint64_t bytes_sent_ = 0;
  std::set<int> left_;             // peers that announced leaving
  std::vector<size_t> held_from_;  // messages of held_ by sender
  std::shared_ptr<spdlog::logger> log_;
  HandshakeWatch handshakes_;  // after inbox_: stops watching before the socket closes; also
                               // reports the inbox's dropped connections
  std::vector<zmq::socket_t> outbox_events_;  // by rank: outboxes_[r]'s monitor (none at ours)
  std::vector<std::optional<Clock::time_point>> outbox_lost_;  // by rank: when it dropped
  std::map<int, int> inbox_links_;  // the inbox's connections (file descriptor) by hello: rank
  std::vector<int> inbox_drops_;    // inbox connections that dropped, not judged yet
  std::vector<bool> greeted_;       // by rank: its hello arrived
  LogThrottle drop_log_;
  uint64_t dropped_ = 0;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_PEER_MESH_H_
