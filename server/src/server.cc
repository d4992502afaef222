#include "tessera/server/server.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "server_impl.h"
#include "tessera/common/logging.h"
#include "tessera/table/wire.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/join.h"
#include "tessera/transport/message.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/router.h"
#include "tessera/transport/security.h"
#include "tessera/transport/socket_limits.h"

namespace tessera {

using server_internal::kLeftClock;

namespace {

// Rounds of receiving between two checks for early pushes (see Loop).
constexpr int kMaxRoundsPerPoll = 256;

}  // namespace

Server::Impl::Impl(ServerOptions options, zmq::context_t& context)
    : options_(std::move(options)),
      context_(context),
      socket_(context, zmq::socket_type::router),
      coordinator_(context, zmq::socket_type::dealer),
      log_(MakeLogger(fmt::format("server-{}", options_.rank))),
      handshakes_(context, socket_, fmt::format("server {}", options_.rank), log_,
                  ZMQ_EVENT_DISCONNECTED) {}

Status Server::Impl::Start() {
  if (options_.coordinator.empty())
    return Status::InvalidArgument("server: no coordinator endpoint");
  ConfigureSocket(socket_);
  socket_.set(zmq::sockopt::router_mandatory,
              1);  // a vanished client, or a full queue, is an error, not a silent drop
  socket_.set(zmq::sockopt::sndhwm, std::max(options_.send_queue, 1));
  SecureBindSide(socket_, options_.secret);
  // Clients split larger messages into frames of kDataPartBytes (parts.h).
  LimitIncoming(socket_, kMaxDataFrameBytes, kDataReceiveQueue);
  ConfigureControlSocket(coordinator_);
  SecureConnectSide(coordinator_, options_.secret);
  proof_ = SecretProof(options_.secret);
  auto ep = BindSocket(socket_, options_.listen);
  if (!ep.ok()) return ep.status();
  endpoint_ = *ep;
  auto liveness = LivenessAgent::Start({.coordinator = options_.coordinator,
                                        .role = proto::Role::SERVER,
                                        .rank = static_cast<uint32_t>(options_.rank),
                                        .secret = options_.secret,
                                        .timeout = options_.heartbeat_timeout},
                                       context_);
  if (!liveness.ok()) return liveness.status();
  liveness_ = std::move(liveness).value();
  auto membership = JoinJob(coordinator_, options_.coordinator,
                            {proto::Role::SERVER, static_cast<uint32_t>(options_.rank), endpoint_,
                             options_.secret, liveness_ != nullptr},
                            options_.join_timeout);
  if (!membership.ok()) {
    return Status(membership.status().code(),
                  fmt::format("joining via coordinator {}: {}", options_.coordinator,
                              membership.status().message()));
  }
  if (liveness_) liveness_->Joined();  // none when heartbeats are off
  num_workers_ = membership->num_workers;
  num_servers_ = static_cast<uint32_t>(std::max<size_t>(membership->servers.size(), 1));
  peers_.resize(num_workers_);
  log_->info("serving at {} for {} workers", endpoint_, num_workers_);
  loop_.Start([this] { Loop(); });
  return Status::Ok();
}

// Polls the sockets' ZMQ_FDs with poll(2) rather than zmq_poll, which asks every socket for
// ZMQ_EVENTS (system calls) on every wake: this loop wakes once per client message. A ZMQ_FD
// signals a change of its socket's state once, and using the socket (a receive, and a send
// too) may take the signal; so a socket is read until it has nothing after its FD fired or
// after any send on it (Send sets socket_may_have_input_), and the loop waits in poll only
// when no socket may hold input.
void Server::Impl::Loop() {
  // The handshake watch's socket is drained whenever its FD fires, so its edge is never lost.
  std::array<pollfd, 4> fds = {pollfd{socket_.get(zmq::sockopt::fd), POLLIN, 0},
                               pollfd{coordinator_.get(zmq::sockopt::fd), POLLIN, 0},
                               pollfd{loop_.waker().poll_item().fd, POLLIN, 0},
                               pollfd{handshakes_.fd(), POLLIN, 0}};
  const auto on_event = [this](uint16_t event, uint32_t fd) { OnConnectionEvent(event, fd); };
  handshakes_.Drain(on_event);
  bool coordinator_may_have_input = true;
  socket_may_have_input_ = true;
  const CommOptions& comm = options_.comm;
  TokenBucket budget(comm.bytes_per_second, std::max(comm.bytes_per_second * 0.1, 64.0 * 1024));
  while (!loop_.stopping() && !finished_) {
    int timeout_ms = -1;
    if (comm.early_sends() && HasChangedRows()) {
      budget.Refill(TokenBucket::Clock::now());
      timeout_ms = static_cast<int>(budget.TimeUntilPositive().count());
    }
    // A worker's overrun Error waiting for room in its queue is tried again every 20 ms.
    if (Untold() && (timeout_ms < 0 || timeout_ms > 20)) timeout_ms = 20;
    if (socket_may_have_input_ || coordinator_may_have_input) timeout_ms = 0;
    for (pollfd& p : fds) p.revents = 0;
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      log_->error("poll failed: {}", std::strerror(errno));
      socket_may_have_input_ = coordinator_may_have_input = true;
    }
    if ((fds[0].revents & POLLIN) != 0) socket_may_have_input_ = true;
    if ((fds[1].revents & POLLIN) != 0) coordinator_may_have_input = true;
    if ((fds[2].revents & POLLIN) != 0) loop_.waker().Drain();
    if ((fds[3].revents & POLLIN) != 0) {
      handshakes_.Drain(on_event);
      // Read the socket empty before judging a drop (JudgeDrops).
      if (!drops_.empty()) socket_may_have_input_ = true;
    }
    if (Untold()) TellOverrun();
    if (comm.early_sends()) {
      budget.Refill(TokenBucket::Clock::now());
      // Everything sent counts against the budget; only early pushes wait for it.
      budget.Spend(static_cast<double>(bytes_since_refill_));
      bytes_since_refill_ = 0;
      // Several messages per round if the budget allows: a busy round may take a while.
      for (int i = 0; i < 16 && budget.has_tokens() && HasChangedRows(); ++i) {
        PushEarly();
        budget.Spend(static_cast<double>(bytes_since_refill_));
        bytes_since_refill_ = 0;
      }
    }
    // Take one message from each socket per round so a busy client cannot starve the other,
    // and return to the top after a bounded number of rounds so early pushes get their turn
    // (the sockets still count as holding input then, so the poll does not wait).
    for (int rounds = 0; (socket_may_have_input_ || coordinator_may_have_input) &&
                         rounds < kMaxRoundsPerPoll && !loop_.stopping() && !finished_;
         ++rounds) {
      if (socket_may_have_input_) {
        if (auto frame = TryReceiveRouted(socket_, kMaxDataMessageBytes)) {
          current_fd_ = frame->fd;
          if (frame->fd >= 0) connections_.try_emplace(frame->fd, -1);
          if (!frame->oversized.ok()) {
            Reject(frame->identity, 0, frame->oversized);
          } else {
            HandleClient(frame->identity, std::move(frame->payload));
          }
        } else {
          socket_may_have_input_ = false;
          if (!drops_.empty()) JudgeDrops();
        }
      }
      if (coordinator_may_have_input) {
        zmq::message_t frame;
        if (ReceiveRetrying(coordinator_, frame, zmq::recv_flags::dontwait)) {
          HandleCoordinator(std::move(frame));
        } else {
          coordinator_may_have_input = false;
        }
      }
    }
  }
}

void Server::Impl::OnConnectionEvent(uint16_t event, uint32_t fd) {
  if (event == ZMQ_EVENT_DISCONNECTED) drops_.push_back(static_cast<int>(fd));
}

// A worker's connection closing after it left, or one that only asked for a checkpoint, is the
// job's course; a registered worker's before it left, or one on which no message ever arrived
// (ZeroMQ cut it for an oversized or malformed frame, or a stranger under --insecure that sent
// nothing whole), is logged.
void Server::Impl::JudgeDrops() {
  for (const int fd : std::exchange(drops_, {})) {
    auto it = connections_.find(fd);
    if (it == connections_.end()) {
      handshakes_.LogDrop(endpoint_, fd, "a connection on which no whole message arrived");
      continue;
    }
    const int worker = it->second;
    connections_.erase(it);
    if (worker >= 0 && static_cast<size_t>(worker) < peers_.size() &&
        peers_[worker].clock != kLeftClock && !finished_) {
      handshakes_.LogDrop(endpoint_, fd,
                          fmt::format("worker {}'s connection, before it left,", worker));
    }
  }
}

void Server::Impl::HandleCoordinator(zmq::message_t frame) {
  auto msg = IncomingMessage::Parse(std::move(frame));
  if (!msg.ok()) {
    log_->error("bad message from coordinator: {}", msg.status().ToString());
    return;
  }
  if ((*msg)->envelope().getBody().isLeave()) {
    log_->info("job finished; shutting down");
    finished_ = true;
  }
}

bool Server::Impl::Send(const std::string& identity, OutgoingMessage& msg) {
  socket_may_have_input_ = true;  // see Loop
  if (!overrun_.empty()) {
    if (auto it = overrun_.find(identity); it != overrun_.end()) {
      ++it->second.dropped;
      CountStat([](ServerStats& s) { ++s.overrun_messages; });
      return false;
    }
  }
  zmq::message_t frame = msg.ToFrame();
  const size_t bytes = frame.size();
  // Never blocks: a worker that does not read must not stop the server for the others.
  Status sent = SendRouted(socket_, identity, std::move(frame), zmq::send_flags::dontwait);
  if (sent.code() == StatusCode::kFailedPrecondition) {
    Overrun(identity);
    return false;
  }
  bytes_since_refill_ += bytes;
  CountStat([&](ServerStats& s) { s.bytes_sent += bytes; });
  if (!sent.ok()) {
    // EHOSTUNREACH: the peer is gone. Its requests die with it; everyone else goes on. Say so
    // once per peer, not once per push.
    for (size_t w = 0; w < peers_.size(); ++w) {
      if (peers_[w].identity == identity) {
        if (!peers_[w].unreachable) log_->warn("worker {} is unreachable: {}", w, sent.message());
        peers_[w].unreachable = true;
        return false;
      }
    }
    log_->warn("cannot answer an unregistered peer: {}", sent.message());
    return false;
  }
  return true;
}

// A worker that does not read what this server sends it (stopped, or a peer that only sends) would
// make its queue grow without bound. Past ServerOptions::send_queue messages, what would go to it
// is dropped and counted, and it is told with an Error as soon as one fits, which fails its
// Client: it never goes on with answers or pushes missing.
void Server::Impl::Overrun(const std::string& identity) {
  auto [it, inserted] = overrun_.try_emplace(identity);
  ++it->second.dropped;
  CountStat([&](ServerStats& s) {
    ++s.overrun_messages;
    if (inserted) ++s.overrun_workers;
  });
  if (!inserted) return;
  std::string who = "an unregistered peer";
  for (size_t w = 0; w < peers_.size(); ++w) {
    if (peers_[w].identity == identity) who = fmt::format("worker {}", w);
  }
  log_->error(
      "{} has {} messages from this server queued that it has not read (the bound, "
      "ServerOptions::send_queue): dropping what this server sends it, and telling it so, which "
      "fails it",
      who, options_.send_queue);
}

void Server::Impl::TellOverrun() {
  for (auto it = overrun_.begin(); it != overrun_.end();) {
    const std::string& identity = it->first;
    OverrunState& overrun = it->second;
    if (overrun.told) {
      ++it;
      continue;
    }
    OutgoingMessage msg(options_.rank, 0);
    FillError(Status::DataLoss(fmt::format(
                  "server {} dropped {} messages (answers, pushes) to this worker because more "
                  "than {} it had not read were queued for it; this worker cannot go on without "
                  "them (was it stopped, or starved of CPU?)",
                  options_.rank, overrun.dropped, options_.send_queue)),
              msg.envelope().getBody().initError());
    Status sent = SendRouted(socket_, identity, msg.ToFrame(), zmq::send_flags::dontwait);
    if (sent.code() == StatusCode::kFailedPrecondition) {  // still full
      ++it;
      continue;
    }
    if (!sent.ok()) {  // the peer is gone: nothing more goes to it, so it needs no entry
      it = overrun_.erase(it);
      continue;
    }
    overrun.told = true;
    ++it;
  }
}

void Server::Impl::Reject(const std::string& identity, uint64_t request_id, proto::ErrorCode code,
                          const std::string& text) {
  Reject(identity, request_id, text, [&](proto::Error::Builder e) { FillError(code, text, e); });
}

void Server::Impl::Reject(const std::string& identity, uint64_t request_id, const Status& status) {
  Reject(identity, request_id, status.ToString(),
         [&](proto::Error::Builder e) { FillError(status, e); });
}

// Logs, counts and answers a rejected message; `fill` writes the wire error.
template <typename Fill>
void Server::Impl::Reject(const std::string& identity, uint64_t request_id,
                          const std::string& logged, Fill fill) {
  if (reject_log_.Allow()) {
    log_->error("rejected message: {}{}", logged, reject_log_.TakeSuppressedNote());
  }
  CountStat([](ServerStats& s) { ++s.rejected_messages; });
  OutgoingMessage reply(options_.rank, request_id);
  fill(reply.envelope().getBody().initError());
  Send(identity, reply);
}

void Server::Impl::HandleClient(const std::string& identity, zmq::message_t payload) {
  auto parsed = IncomingMessage::Parse(std::move(payload));
  if (!parsed.ok()) {
    Reject(identity, 0, ParseErrorCode(parsed.status()), parsed.status().message());
    return;
  }
  auto env = (*parsed)->envelope();
  uint64_t request_id = 0;
  try {
    request_id = env.getRequestId();
    auto body = env.getBody();
    if (body.isRegister()) {
      OnRegister(identity, request_id, body.getRegister());
      return;
    }
    // Checkpoints come from a connection of their own, authenticated by the secret's proof.
    if (body.isSaveTables()) {
      OnSaveTables(identity, request_id, body.getSaveTables());
      return;
    }
    if (body.isRestoreTables()) {
      OnRestoreTables(identity, request_id, body.getRestoreTables());
      return;
    }
    uint32_t worker = env.getSender();
    if (worker >= peers_.size() || peers_[worker].identity != identity) {
      Reject(identity, request_id, proto::ErrorCode::UNAUTHENTICATED,
             fmt::format("message from a peer that has not registered as worker {}", worker));
      return;
    }
    if (body.isWaitingAtBarrier()) {
      peers_[worker].at_barrier = std::max<uint64_t>(body.getWaitingAtBarrier().getId(), 1);
      peers_[worker].last_barrier =
          std::max(peers_[worker].last_barrier, peers_[worker].at_barrier);
      FailDeadlockedReads();
      return;
    }
    peers_[worker].at_barrier = 0;  // any other message: it is past its barrier
    switch (body.which()) {
      case proto::Envelope::Body::CREATE_TABLE:
        OnCreateTable(identity, request_id, body.getCreateTable());
        break;
      case proto::Envelope::Body::GET:
        OnGet(worker, request_id, body.getGet());
        break;
      case proto::Envelope::Body::UNSUBSCRIBE:
        OnUnsubscribe(worker, request_id, body.getUnsubscribe());
        break;
      case proto::Envelope::Body::UPDATE:
        if (OnUpdate(worker, body.getUpdate())) {
          if (body.getUpdate().getAckWanted()) {
            OutgoingMessage ack(options_.rank, 0);
            ack.envelope().getBody().initUpdateAck().setAppliedSeq(peers_[worker].applied_seq);
            Send(identity, ack);
          }
          if (body.getUpdate().getClock() >= 0) OnClock(worker, body.getUpdate().getClock());
        }
        break;
      case proto::Envelope::Body::CLOCK:
        OnClock(worker, body.getClock().getClock());
        break;
      case proto::Envelope::Body::LEAVE:
        OnClock(worker, kLeftClock);
        if (request_id != 0) {
          // The acknowledgement tells the worker that everything it sent before the Leave is
          // applied, so it may close its connection: closing earlier can lose what is still
          // in flight (a TCP reset drops it), and with it the worker's last clocks.
          OutgoingMessage ack(options_.rank, request_id);
          ack.envelope().getBody().initLeave().setRank(worker);
          Send(identity, ack);
        }
        break;
      default:
        Reject(identity, request_id, proto::ErrorCode::INVALID_ARGUMENT,
               "a server does not handle this message");
    }
  } catch (const kj::Exception& e) {
    Reject(identity, request_id, proto::ErrorCode::MALFORMED,
           fmt::format("malformed message: {}", e.getDescription().cStr()));
  }
}

void Server::Impl::OnRegister(const std::string& identity, uint64_t request_id,
                              proto::Register::Reader reg) {
  if (reg.getSecret() != proof_) {
    Reject(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
    return;
  }
  uint32_t rank = reg.getRank();
  if (reg.getRole() != proto::Role::WORKER || rank >= peers_.size()) {
    Reject(identity, request_id, proto::ErrorCode::OUT_OF_RANGE,
           fmt::format("worker rank {} but the job has {} workers", rank, peers_.size()));
    return;
  }
  Peer& peer = peers_[rank];
  if (current_fd_ >= 0) connections_[current_fd_] = static_cast<int>(rank);
  if (!peer.identity.empty() && peer.identity != identity) {
    log_->warn("worker {} reconnected from a new connection", rank);
  }
  peer.identity = identity;
  peer.unreachable = false;
  OutgoingMessage reply(options_.rank, request_id);
  reply.envelope().getBody().initMembership().setNumWorkers(num_workers_);
  Send(identity, reply);
}

void Server::Impl::OnCreateTable(const std::string& identity, uint64_t request_id,
                                 proto::TableSpec::Reader wire) {
  TableSpec spec = TableSpecFromProto(wire);
  if (Status s = spec.Validate(); !s.ok()) {
    Reject(identity, request_id, s);
    return;
  }
  if (tables_.size() >= server_internal::kMaxTables && !tables_.contains(spec.id)) {
    Reject(identity, request_id,
           Status::OutOfRange(fmt::format("table {} '{}': the job already has {} tables, the limit",
                                          spec.id, spec.name, tables_.size())));
    return;
  }
  auto [it, inserted] = tables_.try_emplace(spec.id);
  if (inserted) {
    it->second.spec = spec;
    log_->debug("created table {} '{}'", spec.id, spec.name);
    if (!restored_.empty()) FillRestored(it->second);
  } else if (!it->second.spec.SameAs(spec)) {
    Reject(identity, request_id,
           Status::FailedPrecondition(fmt::format(
               "table {} already exists as '{}' with a different shape, type or staleness", spec.id,
               it->second.spec.name)));
    return;
  }
  OutgoingMessage reply(options_.rank, request_id);
  reply.envelope().getBody().initTableAck().setId(spec.id);
  Send(identity, reply);
}

Result<server_internal::ShardTable*> Server::Impl::FindTable(TableId id) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return Status::NotFound(fmt::format("unknown table {}", id));
  return &it->second;
}

Server::Server(ServerOptions options, zmq::context_t& context)
    : impl_(std::make_unique<Impl>(std::move(options), context)) {}
Server::~Server() = default;
Status Server::Start() { return impl_->Start(); }
const std::string& Server::endpoint() const { return impl_->endpoint(); }
void Server::WaitUntilDone() { impl_->WaitUntilDone(); }
void Server::Stop() { impl_->Stop(); }
ServerStats Server::stats() const { return impl_->stats(); }

}  // namespace tessera
