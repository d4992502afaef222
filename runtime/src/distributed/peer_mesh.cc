#include "distributed/peer_mesh.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "tessera/common/check.h"
#include "tessera/common/logging.h"
#include "tessera/transport/connect_watch.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/frame_handover.h"
#include "tessera/transport/parts.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/security.h"
#include "tessera/transport/socket_limits.h"
#include "tessera/transport/waker.h"

namespace tessera::internal {
namespace {

using Clock = std::chrono::steady_clock;

// The tag of the mesh's own messages (no exchange uses it), and their steps: the sender left the
// program; the first message on a connection, which tells the receiver whose it is.
constexpr uint64_t kLinkTag = ~uint64_t{0};
constexpr int64_t kLeavingStep = INT64_MIN;
constexpr int64_t kHelloStep = INT64_MIN + 1;

// The round slots' file in a LocalInbox's directory (round_slots.h).
constexpr char kRoundSlotsName[] = "rounds";

// ConfigureSocket without ZMTP heartbeats (see peer_mesh.h: they cut large hand-overs).
void ConfigureMeshSocket(zmq::socket_t& socket) {
  ConfigureSocket(socket);
  socket.set(zmq::sockopt::heartbeat_ivl, 0);
  socket.set(zmq::sockopt::heartbeat_timeout, 0);
}

// Waits for `socket` to become readable until `deadline`; false on time-out.
bool WaitReadable(zmq::socket_t& socket, Clock::time_point deadline) {
  zmq::pollitem_t items[1] = {{socket.handle(), 0, ZMQ_POLLIN, 0}};
  while (Clock::now() < deadline) {  // a signal ends a poll early
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (PollItems(items, 1, std::max(left, std::chrono::milliseconds(1))) <= 0) continue;
    if ((items[0].revents & ZMQ_POLLIN) != 0) return true;
  }
  return false;
}

// Every worker's ways in, by rank (AnnouncePeer).
struct PeerAddresses {
  std::vector<std::string> endpoints, local_endpoints, hosts;
};

// Announces this worker's ways in to the coordinator and returns every worker's.
Result<PeerAddresses> ExchangeEndpoints(const PeerMeshOptions& o, zmq::context_t& ctx,
                                        const std::string& endpoint,
                                        const std::string& local_endpoint,
                                        const std::string& host) {
  zmq::socket_t coordinator(ctx, zmq::socket_type::dealer);
  ConfigureControlSocket(coordinator);
  SecureConnectSide(coordinator, o.secret);
  try {
    coordinator.connect(o.coordinator);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument(
        fmt::format("peer mesh: cannot connect to coordinator {}: {}", o.coordinator, e.what()));
  }
  OutgoingMessage msg(static_cast<uint32_t>(o.rank), 1);
  auto a = msg.envelope().getBody().initAnnouncePeer();
  a.setRank(static_cast<uint32_t>(o.rank));
  a.setEndpoint(endpoint);
  a.setSecret(SecretProof(o.secret));
  a.setLocalEndpoint(local_endpoint);
  a.setHost(host);
  SendRetrying(coordinator, msg.ToFrame(), zmq::send_flags::none);
  if (!WaitReadable(coordinator, Clock::now() + o.timeout)) {
    return Status::Unavailable(
        fmt::format("peer mesh: not every worker announced itself to {} within {} ms",
                    o.coordinator, o.timeout.count()));
  }
  zmq::message_t frame;
  (void)ReceiveRetrying(coordinator, frame, zmq::recv_flags::none);
  auto reply = IncomingMessage::Parse(std::move(frame));
  if (!reply.ok()) return reply.status();
  try {
    auto body = (*reply)->envelope().getBody();
    if (body.isError()) return StatusFromError(body.getError());
    if (!body.isPeerList())
      return Status::Internal("peer mesh: unexpected reply from the coordinator");
    const auto list = body.getPeerList();
    PeerAddresses peers;
    for (auto ep : list.getEndpoints()) peers.endpoints.emplace_back(ep);
    for (auto ep : list.getLocalEndpoints()) peers.local_endpoints.emplace_back(ep);
    for (auto h : list.getHosts()) peers.hosts.emplace_back(h);
    const size_t n = static_cast<size_t>(o.num_workers);
    // No local endpoints listed: every peer is reached at its endpoint.
    if (peers.local_endpoints.empty() && peers.hosts.empty()) {
      peers.local_endpoints.resize(n);
      peers.hosts.resize(n);
    }
    if (peers.endpoints.size() != n || peers.local_endpoints.size() != n ||
        peers.hosts.size() != n) {
      return Status::Internal(
          fmt::format("peer mesh: the coordinator listed {} workers ({} local endpoints, {} "
                      "hosts), expected {}",
                      peers.endpoints.size(), peers.local_endpoints.size(), peers.hosts.size(), n));
    }
    return peers;
  } catch (const kj::Exception& e) {
    return Status::DataLoss(
        fmt::format("peer mesh: malformed peer list: {}", e.getDescription().cStr()));
  }
}

// A wait for worker `from`'s step `step` of exchange `tag` that it will never send: it left.
Status PeerLeft(int from, uint64_t tag, int64_t step) {
  return Status::Aborted(
      fmt::format("peer mesh: worker {} left the program (returned from main, or destroyed its "
                  "tessera::Context) while this worker waits for its step {} of exchange {}; every "
                  "worker must make the same parallel_for calls and reductions",
                  from, step, tag));
}

}  // namespace

PeerMesh::PeerMesh(const PeerMeshOptions& options, zmq::context_t& context)
    : options_(options),
      inbox_(context, zmq::socket_type::pull),
      log_(MakeLogger(fmt::format("peer-mesh-{}", options.rank))),
      handshakes_(context, inbox_, "peer-mesh inbox", log_, ZMQ_EVENT_DISCONNECTED) {
  held_from_.resize(static_cast<size_t>(std::max(options.num_workers, 1)));
  greeted_.resize(held_from_.size());
  ConfigureMeshSocket(inbox_);
  SecureBindSide(inbox_, options_.secret);
  // Senders split larger messages into frames of kDataPartBytes (Push).
  LimitIncoming(inbox_, kMaxDataFrameBytes, kDataReceiveQueue);
}

PeerMesh::~PeerMesh() {
  for (size_t r = 0; r < outbox_events_.size(); ++r) {
    if (outbox_events_[r]) zmq_socket_monitor(outboxes_[r].handle(), nullptr, 0);
  }
}

Result<std::unique_ptr<PeerMesh>> PeerMesh::Connect(const PeerMeshOptions& options,
                                                    zmq::context_t& context) {
  if (options.num_workers < 1 || options.rank < 0 || options.rank >= options.num_workers) {
    return Status::InvalidArgument(
        fmt::format("peer mesh: rank {} of {} workers", options.rank, options.num_workers));
  }
  std::unique_ptr<PeerMesh> mesh(new PeerMesh(options, context));
  if (options.num_workers == 1) return mesh;
  if (options.coordinator.empty()) return Status::InvalidArgument("peer mesh: no coordinator");
  Result<std::string> bound = BindSocket(mesh->inbox_, options.bind);
  if (!bound.ok()) {
    return Status(bound.status().code(),
                  fmt::format("peer mesh: binding {}: {}", options.bind, bound.status().message()));
  }
  mesh->endpoint_ = *bound;
  const std::string host = !options.host.empty() ? options.host : HostIdentity();
  if (options.local_inbox && !host.empty() && bound->starts_with("tcp://")) {
    // Bound last: it turns CURVE off for the inbox's later binds.
    Result<LocalInbox> local = LocalInbox::Bind(mesh->inbox_, LocalInboxParent());
    if (local.ok()) {
      mesh->local_ = std::move(local).value();
      Result<RoundSlots> slots = RoundSlots::Create(
          mesh->local_.directory() + "/" + kRoundSlotsName, options.num_workers);
      if (slots.ok()) {
        mesh->slots_ = std::move(slots).value();
      } else {
        mesh->log_->debug("peer mesh: rounds to peers on this host go in messages ({})",
                          slots.status().message());
      }
    } else {
      mesh->log_->debug("peer mesh: peers on this host use {} ({})", *bound,
                        local.status().message());
    }
  }
  Result<PeerAddresses> peers =
      ExchangeEndpoints(options, context, *bound, mesh->local_.endpoint(),
                        mesh->local_.endpoint().empty() ? std::string() : host);
  if (!peers.ok()) return peers.status();
  // A peer's local endpoint when it runs where this worker does and its directory is what a
  // LocalInbox makes; its CURVE endpoint otherwise.
  for (int r = 0; r < options.num_workers; ++r) {
    const size_t i = static_cast<size_t>(r);
    const bool local = r != options.rank && !peers->local_endpoints[i].empty() && !host.empty() &&
                       peers->hosts[i] == host && PrivateToThisUser(peers->local_endpoints[i]);
    mesh->routes_.push_back(local ? peers->local_endpoints[i] : peers->endpoints[i]);
    mesh->slots_from_.emplace_back();
    if (local) {
      // Mapped before this worker's hello says so (WatchAndGreet); the peer removes the file
      // once every hello has arrived.
      const std::string path = IpcDirectory(peers->local_endpoints[i]) + "/" + kRoundSlotsName;
      Result<RoundSlots> slots = RoundSlots::Open(path, options.rank, options.num_workers);
      if (slots.ok()) {
        mesh->slots_from_.back() = std::move(slots).value();
      } else {
        mesh->log_->debug("peer mesh: rounds from worker {} come in messages ({})", r,
                          slots.status().message());
      }
    }
  }
  mesh->slots_to_.assign(static_cast<size_t>(options.num_workers), false);
  mesh->rounds_sent_.assign(static_cast<size_t>(options.num_workers), 0);
  mesh->rounds_received_.assign(static_cast<size_t>(options.num_workers), 0);
  const std::vector<std::string>& endpoints = mesh->routes_;
  mesh->outboxes_.reserve(endpoints.size());
  {
    // A peer whose published endpoint does not route from here is named within seconds, not by
    // the first exchange's time-out.
    ConnectWatch reach(context);
    for (int r = 0; r < options.num_workers; ++r) {
      mesh->outboxes_.emplace_back();
      if (r == options.rank) continue;
      zmq::socket_t out(context, zmq::socket_type::push);
      ConfigureMeshSocket(out);
      if (!endpoints[r].starts_with("ipc://")) SecureConnectSide(out, options.secret);
      out.set(zmq::sockopt::linger, 10000);  // a worker's last hand-over must reach its peers
      reach.Watch(out, fmt::format("worker {}'s peer-mesh inbox", r), endpoints[r]);
      try {
        out.connect(endpoints[r]);
      } catch (const zmq::error_t& e) {
        return Status::Unavailable(fmt::format("peer mesh: cannot connect to worker {} at {}: {}",
                                               r, endpoints[r], e.what()));
      }
      mesh->outboxes_.back() = std::move(out);
    }
    if (Status s = reach.Await(); !s.ok()) return Status(s.code(), "peer mesh: " + s.message());
  }
  if (Status s = mesh->WatchAndGreet(context); !s.ok()) return s;
  if (Status s = mesh->AwaitGreetings(); !s.ok()) return s;
  // Every peer's connection to this inbox is made (its hello came on it): nobody needs the
  // socket file any more.
  mesh->local_.Remove();
  return mesh;
}

// Every connection is up (its handshake done) once its hello has arrived: from then on nothing
// this worker sends waits for a handshake that a peer leaving early would cut short.
Status PeerMesh::AwaitGreetings() {
  const auto deadline = Clock::now() + options_.timeout;
  while (true) {
    if (Status s = CheckLinks(); !s.ok()) return s;
    int missing = -1;
    for (int r = 0; r < options_.num_workers && missing < 0; ++r) {
      if (r != options_.rank && !greeted_[static_cast<size_t>(r)]) missing = r;
    }
    if (missing < 0) return Status::Ok();
    if (!WaitForTraffic(deadline)) {
      return Status::Unavailable(fmt::format(
          "peer mesh: no hello from worker {} within {} ms of connecting to it (is it alive?)",
          missing, options_.timeout.count()));
    }
  }
}

Status PeerMesh::WatchAndGreet(zmq::context_t& context) {
  outbox_events_.resize(outboxes_.size());
  outbox_lost_.resize(outboxes_.size());
  for (int r = 0; r < options_.num_workers; ++r) {
    if (r == options_.rank) continue;
    zmq::socket_t& out = outboxes_[static_cast<size_t>(r)];
    // Unique within the context: the socket's address.
    const std::string monitor = fmt::format("inproc://tessera-peer-link-{}", out.handle());
    if (zmq_socket_monitor(out.handle(), monitor.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
      return Status::Internal(fmt::format("peer mesh: cannot watch the connection to worker {}: {}",
                                          r, zmq_strerror(zmq_errno())));
    }
    zmq::socket_t events(context, zmq::socket_type::pair);
    events.set(zmq::sockopt::linger, 0);
    events.connect(monitor);
    outbox_events_[static_cast<size_t>(r)] = std::move(events);
    OutgoingMessage hello(static_cast<uint32_t>(options_.rank), 0);
    auto peer = hello.envelope().getBody().initPeer();
    peer.setTag(kLinkTag);
    peer.setStep(kHelloStep);
    peer.setMapsSlots(slots_from_[static_cast<size_t>(r)].mapped());
    if (Status s = Push(r, hello.ToFrame()); !s.ok()) return s;
  }
  return Status::Ok();
}

Status PeerMesh::Send(int to, OutgoingMessage& msg) { return SendFrame(to, msg.ToFrame()); }

Status PeerMesh::SendCopy(int to, const zmq::message_t& frame) {
  zmq::message_t copy(frame.data(), frame.size());
  MarkFrameSent(copy);
  return SendFrame(to, std::move(copy));
}

Status PeerMesh::SendFrame(int to, zmq::message_t frame) {
  if (Status s = CheckLinks(); !s.ok()) return s;
  return Push(to, std::move(frame));
}

Status PeerMesh::Push(int to, zmq::message_t frame) {
  TESSERA_CHECK(to != options_.rank && to >= 0 && to < options_.num_workers);
  bytes_sent_ += frame.size();
  try {
    SendInParts(outboxes_[to], std::move(frame));
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(fmt::format("peer mesh: send to worker {}: {}", to, e.what()));
  }
  return Status::Ok();
}

Status PeerMesh::AnnounceLeaving() {
  for (int r = 0; r < options_.num_workers; ++r) {
    if (r == options_.rank) continue;
    OutgoingMessage msg(static_cast<uint32_t>(options_.rank), 0);
    auto peer = msg.envelope().getBody().initPeer();
    peer.setTag(kLinkTag);
    peer.setStep(kLeavingStep);
    // Not SendFrame: a lost connection elsewhere must not keep the others from hearing it.
    if (Status s = Push(r, msg.ToFrame()); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::unique_ptr<IncomingMessage>> PeerMesh::Receive(int from, uint64_t tag, int64_t step) {
  TESSERA_CHECK(from != options_.rank && from >= 0 && from < options_.num_workers);
  const auto key = std::make_tuple(from, tag, step);
  const auto deadline = Clock::now() + options_.timeout;
  while (true) {
    if (Status s = CheckLinks(); !s.ok()) return s;
    if (auto it = held_.find(key); it != held_.end()) {
      auto msg = std::move(it->second);
      held_.erase(it);
      --held_from_[static_cast<size_t>(from)];
      return msg;
    }
    if (left_.count(from)) {
      return PeerLeft(from, tag, step);
    }
    if (!WaitForTraffic(deadline)) {
      return Status::Unavailable(
          fmt::format("peer mesh: worker {} sent nothing for step {} of exchange {} within {} ms "
                      "(is it alive?)",
                      from, step, tag, options_.timeout.count()));
    }
  }
}

void PeerMesh::DrainInbox() {
  zmq::message_t frame;
  while (ReceiveRetrying(inbox_, frame, zmq::recv_flags::dontwait)) {
    // The connection it came on (tcp only): ZeroMQ's metadata of the frame.
    const char* fd_text = zmq_msg_gets(frame.handle(), "__fd");
    const int fd = fd_text != nullptr ? std::atoi(fd_text) : -1;
    Result<zmq::message_t> whole = ReceiveRest(inbox_, std::move(frame), kMaxDataMessageBytes);
    if (!whole.ok()) {
      Drop(whole.status());
    } else if (Status s = Hold(std::move(whole).value(), fd); !s.ok()) {
      Drop(s);
    }
    frame = zmq::message_t();
  }
}

Status PeerMesh::CheckLinks() {
  if (options_.num_workers == 1) return Status::Ok();
  // Events first, then the inbox: a peer's leaving message is in the inbox before its
  // connection's drop is reported, so it is read before the drop is judged.
  handshakes_.Drain([this](uint16_t event, uint32_t fd) {
    if (event == ZMQ_EVENT_DISCONNECTED) inbox_drops_.push_back(static_cast<int>(fd));
  });
  const auto now = Clock::now();
  for (size_t r = 0; r < outbox_events_.size(); ++r) {
    if (!outbox_events_[r]) continue;
    zmq::message_t event;
    while (ReceiveRetrying(outbox_events_[r], event, zmq::recv_flags::dontwait)) {
      zmq::message_t address;
      if (event.more())
        (void)ReceiveRetrying(outbox_events_[r], address, zmq::recv_flags::dontwait);
      if (!outbox_lost_[r]) outbox_lost_[r] = now;
    }
  }
  DrainInbox();
  for (const int fd : std::exchange(inbox_drops_, {})) {
    auto link = inbox_links_.find(fd);
    if (link == inbox_links_.end()) {
      // Not a worker of the job (none says anything before its hello): logged, the job goes on.
      handshakes_.LogDrop(endpoint_, static_cast<uint32_t>(fd),
                          "a connection that sent no hello (not a worker of this job)");
      continue;
    }
    const int peer = link->second;
    inbox_links_.erase(link);
    if (left_.count(peer)) continue;
    return Status::Unavailable(fmt::format(
        "peer mesh: the connection from worker {} to this worker's inbox {} was lost (closed or "
        "reset: worker {} died, the network between the two failed, or it sent a frame over the "
        "inbox's bound of {} bytes, which a worker of this build never does) before worker {} left "
        "the program; a message it sent may be lost, so the job cannot go on",
        peer, endpoint_, peer, kMaxDataFrameBytes, peer));
  }
  for (size_t r = 0; r < outbox_lost_.size(); ++r) {
    const int peer = static_cast<int>(r);
    if (!outbox_lost_[r] || left_.count(peer) || now - *outbox_lost_[r] < options_.leaving_grace)
      continue;
    return Status::Unavailable(fmt::format(
        "peer mesh: the connection from this worker to worker {}'s inbox {} was lost (closed or "
        "reset: worker {} died, or the network between the two failed) and worker {} did not "
        "announce leaving the program within {} ms; a message sent to it may be lost, so the job "
        "cannot go on",
        peer, routes_[r], peer, peer, options_.leaving_grace.count()));
  }
  return Status::Ok();
}

bool PeerMesh::WaitForTraffic(Clock::time_point deadline) {
  std::vector<zmq::pollitem_t> items;
  items.push_back({inbox_.handle(), 0, ZMQ_POLLIN, 0});
  items.push_back(handshakes_.poll_item());
  auto until = deadline;
  for (size_t r = 0; r < outbox_events_.size(); ++r) {
    if (outbox_events_[r]) items.push_back({outbox_events_[r].handle(), 0, ZMQ_POLLIN, 0});
    if (outbox_lost_[r] && !left_.count(static_cast<int>(r))) {
      until = std::min(until, *outbox_lost_[r] + options_.leaving_grace);
    }
  }
  while (true) {  // a signal ends a poll early
    const auto now = Clock::now();
    if (now >= until) return now < deadline;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (PollItems(items.data(), items.size(), std::max(left, std::chrono::milliseconds(1))) <= 0)
      continue;
    for (const auto& item : items) {
      if ((item.revents & ZMQ_POLLIN) != 0) return true;
    }
  }
}

// A message that is not a well-formed PeerMessage from another worker of the job is dropped, not
// an error: whatever reaches the inbox (a stray client, a health check, a port scan under
// --insecure) must not stop this worker. With a job secret only the job's workers get through.
Status PeerMesh::Hold(zmq::message_t frame, int fd) {
  auto parsed = IncomingMessage::Parse(std::move(frame));
  if (!parsed.ok()) return parsed.status();
  try {
    auto env = (*parsed)->envelope();
    if (!env.getBody().isPeer()) return Status::DataLoss("not a PeerMessage");
    const int sender = static_cast<int>(env.getSender());
    if (sender < 0 || sender >= options_.num_workers || sender == options_.rank) {
      return Status::DataLoss(fmt::format("from unknown worker {}", sender));
    }
    auto peer = env.getBody().getPeer();
    if (peer.getTag() == kLinkTag && peer.getStep() == kLeavingStep) {
      left_.insert(sender);
      return Status::Ok();
    }
    if (peer.getTag() == kLinkTag && peer.getStep() == kHelloStep) {
      if (fd >= 0) inbox_links_[fd] = sender;
      greeted_[static_cast<size_t>(sender)] = true;
      if (!slots_to_.empty()) {
        slots_to_[static_cast<size_t>(sender)] = peer.getMapsSlots() && slots_.mapped();
      }
      return Status::Ok();
    }
    const auto key = std::make_tuple(sender, peer.getTag(), peer.getStep());
    if (held_.contains(key)) {
      return Status::DataLoss(fmt::format("a second one from worker {} for step {} of exchange {}",
                                          sender, peer.getStep(), peer.getTag()));
    }
    if (held_from_[static_cast<size_t>(sender)] >= kMaxHeldPerPeer) {
      return Status::DataLoss(fmt::format(
          "worker {} sent more than {} messages not asked for yet (step {} of exchange {})", sender,
          kMaxHeldPerPeer, peer.getStep(), peer.getTag()));
    }
    held_[key] = std::move(*parsed);
    ++held_from_[static_cast<size_t>(sender)];
  } catch (const kj::Exception& e) {
    return Status::DataLoss(fmt::format("malformed message: {}", e.getDescription().cStr()));
  }
  return Status::Ok();
}

void PeerMesh::Drop(const Status& why) {
  ++dropped_;
  if (drop_log_.Allow()) {
    log_->warn("peer mesh: dropped a message ({}){}", why.message(),
               drop_log_.TakeSuppressedNote());
  }
}

Result<std::vector<std::string>> PeerMesh::AllGather(uint64_t tag, std::string bytes) {
  std::vector<std::string> all(static_cast<size_t>(options_.num_workers));
  if (options_.num_workers > 1) {
    // Encoded once, copied per peer.
    OutgoingMessage msg(static_cast<uint32_t>(options_.rank), 0,
                        static_cast<unsigned>(bytes.size() / sizeof(capnp::word) + 16));
    auto peer = msg.envelope().getBody().initPeer();
    peer.setTag(tag);
    peer.setStep(0);
    peer.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
    const zmq::message_t frame = msg.ToFrame();
    for (int r = 0; r < options_.num_workers; ++r) {
      if (r == options_.rank) continue;
      if (Status s = SendCopy(r, frame); !s.ok()) return s;
    }
  }
  if (Status s = ReceivePayloads(tag, "all-gather", &all); !s.ok()) return s;
  all[options_.rank] = std::move(bytes);
  return all;
}

Result<std::vector<std::string>> PeerMesh::AllToAll(uint64_t tag,
                                                    std::vector<std::string> to_each) {
  std::vector<std::string> got(static_cast<size_t>(options_.num_workers));
  for (int r = 0; r < options_.num_workers; ++r) {
    if (r == options_.rank) continue;
    std::string& bytes = to_each[static_cast<size_t>(r)];
    OutgoingMessage msg(static_cast<uint32_t>(options_.rank), 0,
                        static_cast<unsigned>(bytes.size() / sizeof(capnp::word) + 16));
    auto peer = msg.envelope().getBody().initPeer();
    peer.setTag(tag);
    peer.setStep(0);
    peer.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
    std::string().swap(bytes);
    if (Status s = Send(r, msg); !s.ok()) return s;
  }
  if (Status s = ReceivePayloads(tag, "all-to-all", &got); !s.ok()) return s;
  got[options_.rank] = std::move(to_each[options_.rank]);
  return got;
}

Status PeerMesh::ReceivePayloads(uint64_t tag, const char* what, std::vector<std::string>* into) {
  for (int r = 0; r < options_.num_workers; ++r) {
    if (r == options_.rank) continue;
    auto msg = Receive(r, tag, 0);
    if (!msg.ok()) return msg.status();
    try {
      auto payload = (*msg)->envelope().getBody().getPeer().getPayload();
      (*into)[r].assign(reinterpret_cast<const char*>(payload.begin()), payload.size());
    } catch (const kj::Exception& e) {
      return Status::DataLoss(fmt::format("peer mesh: malformed {} part from worker {}: {}", what,
                                          r, e.getDescription().cStr()));
    }
  }
  return Status::Ok();
}

namespace {

// A spin-wait's pause: lets the core's other work (and its sibling thread) run meanwhile.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

Result<uint64_t> PeerMesh::AwaitPost(int from, uint64_t tag, int64_t step, uint64_t n) {
  const RoundSlots& slots = slots_from_[static_cast<size_t>(from)];
  uint64_t bytes;
  // The peer is usually a few microseconds from posting (it runs the same loop on another core):
  // a short spin saves the futex's sleep and wake-up.
  const auto spin_until = Clock::now() + kPostSpin;
  do {
    for (int i = 0; i < 32; ++i) {
      if (slots.Posted(n, &bytes)) return bytes;
      CpuRelax();
    }
  } while (Clock::now() < spin_until);
  const auto deadline = Clock::now() + options_.timeout;
  while (true) {
    slots.Wait(n, kPostCheck);
    if (slots.Posted(n, &bytes)) return bytes;
    // Waited without the post: a lost peer fails the wait as it fails Receive.
    if (Status s = CheckLinks(); !s.ok()) return s;
    if (slots.Posted(n, &bytes)) return bytes;
    if (left_.count(from)) {
      return PeerLeft(from, tag, step);
    }
    if (Clock::now() >= deadline) {
      return Status::Unavailable(
          fmt::format("peer mesh: worker {} posted nothing for step {} of exchange {} within {} "
                      "ms (is it alive?)",
                      from, step, tag, options_.timeout.count()));
    }
  }
}

Status PeerMesh::ExchangeRounds(uint64_t tag, const RoundsSpec& spec, int in_flight) {
  TESSERA_CHECK(in_flight >= 1);
  const size_t W = static_cast<size_t>(options_.num_workers);
  const size_t me = static_cast<size_t>(options_.rank);
  // Shared slots are free when written only while no more than half of them are in flight. Then
  // every round between workers sharing slots is posted in them (posted_to / posted_from), those
  // that do not fit a slot as "in a message".
  const bool slots_usable = 2 * in_flight <= RoundSlots::kSlots;
  auto posted_to = [&](size_t w) { return slots_usable && slots_to_[w]; };
  auto posted_from = [&](size_t w) { return slots_usable && slots_from_[w].mapped(); };
  std::vector<uint64_t> post(W);  // this round's post to each peer sharing slots
  auto send_round = [&](int r) -> Status {
    std::vector<std::unique_ptr<OutgoingMessage>> messages(W);
    std::vector<char*> to(W, nullptr);
    for (size_t w = 0; w < W; ++w) {
      if (w == me) continue;
      const size_t bytes = spec.bytes_to(r, static_cast<int>(w));
      const uint64_t n = rounds_sent_[w]++;
      if (posted_to(w) && (bytes == 0 || slots_.Reserve(static_cast<int>(w), n, bytes))) {
        post[w] = bytes;
        to[w] = slots_.slot(static_cast<int>(w), n);
        continue;
      }
      post[w] = RoundSlots::kInMessage;
      // One segment (the size hint), so that the message becomes its frame without a copy.
      messages[w] = std::make_unique<OutgoingMessage>(
          static_cast<uint32_t>(me), 0, static_cast<unsigned>(bytes / sizeof(capnp::word) + 16));
      auto peer = messages[w]->envelope().getBody().initPeer();
      peer.setTag(tag);
      peer.setStep(r);
      to[w] = reinterpret_cast<char*>(peer.initPayload(static_cast<unsigned>(bytes)).begin());
    }
    TESSERA_RETURN_IF_ERROR(spec.write(r, to));
    for (size_t w = 0; w < W; ++w) {
      if (w == me) continue;
      if (messages[w]) TESSERA_RETURN_IF_ERROR(Send(static_cast<int>(w), *messages[w]));
      // After the message: a post saying "in a message" has it on its way.
      if (posted_to(w)) slots_.Post(static_cast<int>(w), rounds_sent_[w] - 1, post[w]);
    }
    return Status::Ok();
  };
  int sent = 0;
  std::vector<std::unique_ptr<IncomingMessage>> got(W);
  std::vector<std::span<const char>> from(W);
  for (int r = 0; r < spec.rounds; ++r) {
    for (; sent < spec.rounds && sent < r + in_flight; ++sent) {
      TESSERA_RETURN_IF_ERROR(send_round(sent));
    }
    for (size_t w = 0; w < W; ++w) {
      if (w == me) continue;
      const uint64_t n = rounds_received_[w]++;
      got[w].reset();
      if (posted_from(w)) {
        Result<uint64_t> bytes = AwaitPost(static_cast<int>(w), tag, r, n);
        if (!bytes.ok()) return bytes.status();
        if (*bytes != RoundSlots::kInMessage) {
          if (*bytes > RoundSlots::kSlotBytes) {
            return Status::DataLoss(fmt::format(
                "peer mesh: round {} of exchange {} from worker {} claims {} bytes in its shared "
                "slot, which holds up to {} bytes",
                r, tag, w, *bytes, RoundSlots::kSlotBytes));
          }
          from[w] = std::span<const char>(slots_from_[w].slot(0, n), *bytes);
          TESSERA_RETURN_IF_ERROR(CheckRoundBytes(r, static_cast<int>(w), from[w].size(),
                                                  spec.bytes_from(r, static_cast<int>(w))));
          continue;
        }
      }
      auto msg = Receive(static_cast<int>(w), tag, r);
      if (!msg.ok()) return msg.status();
      got[w] = std::move(msg).value();
      try {
        const auto payload = got[w]->envelope().getBody().getPeer().getPayload();
        from[w] =
            std::span<const char>(reinterpret_cast<const char*>(payload.begin()), payload.size());
      } catch (const kj::Exception& e) {
        return Status::DataLoss(
            fmt::format("peer mesh: malformed round {} of exchange {} from "
                        "worker {}: {}",
                        r, tag, w, e.getDescription().cStr()));
      }
      TESSERA_RETURN_IF_ERROR(CheckRoundBytes(r, static_cast<int>(w), from[w].size(),
                                              spec.bytes_from(r, static_cast<int>(w))));
    }
    TESSERA_RETURN_IF_ERROR(spec.read(r, from));
  }
  return Status::Ok();
}

}  // namespace tessera::internal
