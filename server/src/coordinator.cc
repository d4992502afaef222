#include "tessera/server/coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "tessera/common/log_throttle.h"
#include "tessera/common/logging.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/handshake_watch.h"
#include "tessera/transport/liveness.h"
#include "tessera/transport/message.h"
#include "tessera/transport/node_thread.h"
#include "tessera/transport/router.h"
#include "tessera/transport/security.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Barriers a worker may have open at once. A worker waits for each release before the next
// barrier (Client::Barrier), so one is the norm; a worker whose wait timed out may start another.
constexpr size_t kMaxOpenBarriersPerWorker = 4;

}  // namespace

class Coordinator::Impl {
 public:
  Impl(CoordinatorOptions options, zmq::context_t& context)
      : options_(std::move(options)),
        socket_(context, zmq::socket_type::router),
        log_(MakeLogger("coordinator")),
        handshakes_(context, socket_, "coordinator", log_, ZMQ_EVENT_DISCONNECTED) {}

  ~Impl() { Stop(); }

  Status Start() {
    if (options_.num_servers < 1 || options_.num_workers < 1) {
      return Status::InvalidArgument(
          fmt::format("a job needs at least 1 server and 1 worker (got {} and {})",
                      options_.num_servers, options_.num_workers));
    }
    ConfigureSocket(socket_);
    SecureBindSide(socket_, options_.secret);
    LimitIncoming(socket_, kMaxControlMessageBytes, kControlReceiveQueue);
    // A peer that sends without reading its answers (error replies to a flood) must not make the
    // coordinator queue them without bound: past this many, its answers are dropped. A worker
    // has at most a few answers outstanding.
    socket_.set(zmq::sockopt::sndhwm, kControlReceiveQueue);
    proof_ = SecretProof(options_.secret);
    // The end of the job is the coordinator's last word: the Leave to every server goes out just
    // before the loop returns and the owner closes the socket. Without a linger those messages
    // can be dropped at close, and a server that never hears of the end waits forever.
    socket_.set(zmq::sockopt::linger, 5000);
    auto ep = BindSocket(socket_, options_.listen);
    if (!ep.ok()) return ep.status();
    endpoint_ = *ep;
    server_endpoints_.resize(options_.num_servers);
    server_ids_.resize(options_.num_servers);
    log_->info("listening on {} for {} servers and {} workers", endpoint_, options_.num_servers,
               options_.num_workers);
    if (options_.heartbeat_timeout.count() > 0) {
      started_at_ = Clock::now();
      log_->info("a process unheard for {:.1f} s fails the job (heartbeat timeout {:.1f} s)",
                 Seconds(LivenessTiming::For(options_.heartbeat_timeout).silence),
                 Seconds(options_.heartbeat_timeout));
    }
    loop_.Start([this] { Loop(); });
    return Status::Ok();
  }

  const std::string& endpoint() const { return endpoint_; }
  void WaitUntilDone() { loop_.WaitUntilDone(); }
  void Stop() { loop_.Stop(); }
  int exit_code() const { return exit_code_; }

 private:
  void Loop() {
    std::vector<zmq::pollitem_t> items = {
        {socket_.handle(), 0, ZMQ_POLLIN, 0}, loop_.waker().poll_item(), handshakes_.poll_item()};
    const bool liveness = options_.heartbeat_timeout.count() > 0;
    const auto tick = liveness ? LivenessTiming::For(options_.heartbeat_timeout).check
                               : std::chrono::milliseconds(-1);
    while (!loop_.stopping() && !finished_) {
      PollItems(items.data(), items.size(), tick);
      if (items[1].revents & ZMQ_POLLIN) loop_.waker().Drain();
      // Connection events first, then the messages: a worker's Leave is read before its
      // connection's drop is judged.
      std::vector<std::string> dropped;  // identities, looked up before a new connection
                                         // may take the same file descriptor
      if (items[2].revents & ZMQ_POLLIN) {
        handshakes_.Drain([this, &dropped](uint16_t event, uint32_t fd) {
          if (event != ZMQ_EVENT_DISCONNECTED) return;
          auto c = connections_.find(static_cast<int>(fd));
          if (c == connections_.end()) return;
          dropped.push_back(std::move(c->second));
          connections_.erase(c);
        });
      }
      if (liveness) CheckLiveness(Clock::now());
      while (!loop_.stopping() && !finished_) {
        auto frame = TryReceiveRouted(socket_);
        if (!frame) break;
        // The connection it came on (tcp only), so that its drop can be told apart (OnDrop).
        if (const char* fd = zmq_msg_gets(frame->payload.handle(), "__fd"); fd != nullptr) {
          connections_[std::atoi(fd)] = frame->identity;
          closed_.erase(frame->identity);
        }
        if (frame->multipart) {
          SendError(frame->identity, 0, proto::ErrorCode::MALFORMED, "multi-frame message");
          continue;
        }
        Handle(frame->identity, std::move(frame->payload));
      }
      for (const std::string& identity : dropped) OnDrop(identity);
    }
  }

  void Send(const std::string& identity, OutgoingMessage& msg) {
    if (Status s = SendRouted(socket_, identity, msg); !s.ok())
      log_->error("send to a peer failed: {}", s.message());
  }

  void SendError(const std::string& identity, uint64_t request_id, proto::ErrorCode code,
                 const std::string& text) {
    if (reject_log_.Allow()) {
      log_->error("rejecting message: {}{}", text, reject_log_.TakeSuppressedNote());
    }
    OutgoingMessage reply(0, request_id);
    FillError(code, text, reply.envelope().getBody().initError());
    Send(identity, reply);
  }

  void Handle(const std::string& identity, zmq::message_t payload) {
    auto parsed = IncomingMessage::Parse(std::move(payload));
    if (!parsed.ok()) {
      SendError(identity, 0, ParseErrorCode(parsed.status()), parsed.status().message());
      return;
    }
    try {
      auto env = (*parsed)->envelope();
      auto body = env.getBody();
      switch (body.which()) {
        case proto::Envelope::Body::REGISTER:
          OnRegister(identity, env.getRequestId(), body.getRegister());
          break;
        case proto::Envelope::Body::BARRIER:
          OnBarrier(identity, env.getRequestId(), body.getBarrier().getId());
          break;
        case proto::Envelope::Body::LEAVE:
          OnLeave(identity, env.getRequestId(), body.getLeave().getRank());
          break;
        case proto::Envelope::Body::ANNOUNCE_PEER:
          OnAnnouncePeer(identity, env.getRequestId(), body.getAnnouncePeer());
          break;
        case proto::Envelope::Body::HEARTBEAT:
          OnHeartbeat(identity, body.getHeartbeat());
          break;
        case proto::Envelope::Body::MEMBERSHIP_QUERY:
          OnMembershipQuery(identity, env.getRequestId(), body.getMembershipQuery());
          break;
        default:
          SendError(identity, env.getRequestId(), proto::ErrorCode::INVALID_ARGUMENT,
                    "the coordinator does not handle this message");
      }
    } catch (const kj::Exception& e) {
      SendError(identity, 0, proto::ErrorCode::MALFORMED,
                fmt::format("malformed message: {}", e.getDescription().cStr()));
    }
  }

  void OnRegister(const std::string& identity, uint64_t request_id, proto::Register::Reader reg) {
    if (reg.getSecret() != proof_) {
      SendError(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
      return;
    }
    uint32_t rank = reg.getRank();
    if (reg.getRole() == proto::Role::SERVER) {
      if (rank >= server_endpoints_.size()) {
        SendError(identity, request_id, proto::ErrorCode::OUT_OF_RANGE,
                  fmt::format("server rank {} but the job has {} servers", rank,
                              server_endpoints_.size()));
        return;
      }
      if (!server_endpoints_[rank].empty() && server_ids_[rank] != identity) {
        SendError(identity, request_id, proto::ErrorCode::FAILED_PRECONDITION,
                  fmt::format("server rank {} is already registered", rank));
        return;
      }
      if (server_endpoints_[rank].empty()) ++servers_registered_;
      server_endpoints_[rank] = reg.getEndpoint();
      server_ids_[rank] = identity;
      log_->info("server {} registered at {}", rank, server_endpoints_[rank]);
    } else {
      if (rank >= static_cast<uint32_t>(options_.num_workers)) {
        SendError(
            identity, request_id, proto::ErrorCode::OUT_OF_RANGE,
            fmt::format("worker rank {} but the job has {} workers", rank, options_.num_workers));
        return;
      }
      if (auto it = worker_ids_.find(rank); it != worker_ids_.end() && it->second != identity) {
        SendError(identity, request_id, proto::ErrorCode::FAILED_PRECONDITION,
                  fmt::format("worker rank {} is already registered", rank));
        return;
      }
      worker_ids_[rank] = identity;
      log_->info("worker {} registered", rank);
    }
    // A process that joined without heartbeats (a client with liveness off) is not waited for.
    if (!all_heard_) heard_.insert({static_cast<int>(reg.getRole()), rank});
    if (reg.getHeartbeats() && options_.heartbeat_timeout.count() > 0) {
      // Watched from now on: its agent's first heartbeat comes on another connection, maybe
      // later, and a process stopped before it arrives must not go unnoticed.
      const std::pair<int, uint32_t> key{static_cast<int>(reg.getRole()), rank};
      if (!agents_heard_.contains(key)) {
        unheard_.try_emplace(
            key, Watched{DescribeProcess(reg.getRole(), rank, reg.getPid(), reg.getHost().cStr()),
                         Clock::now()});
      }
    }
    waiting_.push_back({identity, request_id});
    if (servers_registered_ == server_endpoints_.size()) {
      for (const auto& w : waiting_) SendMembership(w.identity, w.request_id);
      waiting_.clear();
    }
  }

  // The servers' endpoints for a connection that is not a member (a checkpoint writer's), once
  // every server has registered; it neither joins nor holds anything back.
  void OnMembershipQuery(const std::string& identity, uint64_t request_id,
                         proto::MembershipQuery::Reader q) {
    if (q.getSecret() != proof_) {
      SendError(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
      return;
    }
    if (servers_registered_ < server_endpoints_.size()) {
      SendError(identity, request_id, proto::ErrorCode::FAILED_PRECONDITION,
                "not every server has registered yet");
      return;
    }
    SendMembership(identity, request_id);
  }

  void SendMembership(const std::string& identity, uint64_t request_id) {
    OutgoingMessage msg(0, request_id);
    auto m = msg.envelope().getBody().initMembership();
    auto servers = m.initServers(static_cast<unsigned>(server_endpoints_.size()));
    for (unsigned i = 0; i < server_endpoints_.size(); ++i) servers.set(i, server_endpoints_[i]);
    m.setNumWorkers(options_.num_workers);
    Send(identity, msg);
  }

  // The runtime's peer mesh: workers learn each other's endpoints here. A worker may announce
  // again (same rank, new endpoint) only before everyone has; answers go out when all have.
  void OnAnnouncePeer(const std::string& identity, uint64_t request_id,
                      proto::AnnouncePeer::Reader a) {
    if (a.getSecret() != proof_) {
      SendError(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
      return;
    }
    const uint32_t rank = a.getRank();
    if (rank >= static_cast<uint32_t>(options_.num_workers)) {
      SendError(identity, request_id, proto::ErrorCode::OUT_OF_RANGE,
                fmt::format("peer rank {} but the job has {} workers", rank, options_.num_workers));
      return;
    }
    if (peer_endpoints_.empty()) peer_endpoints_.resize(options_.num_workers);
    if (peers_complete_) {
      SendError(identity, request_id, proto::ErrorCode::FAILED_PRECONDITION,
                fmt::format("worker {} announced its peer endpoint after the mesh was complete",
                            rank));
      return;
    }
    PeerAddress& address = peer_endpoints_[rank];
    if (address.endpoint.empty()) ++peers_announced_;
    address.endpoint = a.getEndpoint();
    address.local_endpoint = a.getLocalEndpoint();
    address.host = a.getHost();
    // One answer held per rank: a later announcement supersedes the earlier one, whose request is
    // answered now, so repeated announcements cannot grow the coordinator nor flood its answer.
    if (auto it = peer_waiting_.find(rank); it != peer_waiting_.end()) {
      SendError(it->second.identity, it->second.request_id,
                proto::ErrorCode::FAILED_PRECONDITION,
                fmt::format("worker {}'s peer endpoint was announced again", rank));
    }
    peer_waiting_[rank] = {identity, request_id};
    if (peers_announced_ < static_cast<size_t>(options_.num_workers)) return;
    peers_complete_ = true;
    for (const auto& [r, w] : peer_waiting_) {
      OutgoingMessage msg(0, w.request_id);
      auto peers = msg.envelope().getBody().initPeerList();
      const auto n = static_cast<unsigned>(peer_endpoints_.size());
      auto endpoints = peers.initEndpoints(n);
      auto locals = peers.initLocalEndpoints(n);
      auto hosts = peers.initHosts(n);
      for (unsigned i = 0; i < n; ++i) {
        endpoints.set(i, peer_endpoints_[i].endpoint);
        locals.set(i, peer_endpoints_[i].local_endpoint);
        hosts.set(i, peer_endpoints_[i].host);
      }
      Send(w.identity, msg);
    }
    peer_waiting_.clear();
    log_->info("peer mesh of {} workers complete", options_.num_workers);
    std::vector<std::string> endpoints, locals;
    for (const PeerAddress& p : peer_endpoints_) {
      endpoints.push_back(p.endpoint);
      locals.push_back(p.local_endpoint.empty() ? "-" : p.local_endpoint);
    }
    log_->debug("peer mesh endpoints: {}", fmt::join(endpoints, " "));
    log_->debug("peer mesh endpoints for workers on the same host: {}", fmt::join(locals, " "));
  }

  // Only registered workers count, each once per barrier, with a bounded number of barriers open:
  // nothing else may hold a barrier back, release it early, or grow the coordinator.
  void OnBarrier(const std::string& identity, uint64_t request_id, uint64_t id) {
    std::optional<uint32_t> rank;
    for (const auto& [r, who] : worker_ids_) {
      if (who == identity) rank = r;
    }
    if (!rank) {
      SendError(identity, request_id, proto::ErrorCode::UNAUTHENTICATED,
                fmt::format("barrier {} from a peer that has not registered as a worker", id));
      return;
    }
    if (!gone_.empty()) {
      SendError(identity, request_id, proto::ErrorCode::PEER_LEFT, GoneReason(*gone_.begin()));
      return;
    }
    size_t open = 0;
    for (const auto& [open_id, arrivals] : barriers_) {
      for (const auto& a : arrivals) {
        if (a.identity != identity) continue;
        if (open_id == id) {
          SendError(identity, request_id, proto::ErrorCode::FAILED_PRECONDITION,
                    fmt::format("worker {} is already waiting at barrier {}", *rank, id));
          return;
        }
        ++open;
      }
    }
    if (open >= kMaxOpenBarriersPerWorker) {
      SendError(identity, request_id, proto::ErrorCode::FAILED_PRECONDITION,
                fmt::format("worker {} waits at {} barriers already", *rank, open));
      return;
    }
    auto& arrivals = barriers_[id];
    arrivals.push_back({identity, request_id});
    if (arrivals.size() < static_cast<size_t>(options_.num_workers)) return;
    for (const auto& a : arrivals) {
      OutgoingMessage msg(0, a.request_id);
      msg.envelope().getBody().initBarrierRelease().setId(id);
      Send(a.identity, msg);
    }
    barriers_.erase(id);
  }

  void OnLeave(const std::string& identity, uint64_t request_id, uint32_t rank) {
    auto it = worker_ids_.find(rank);
    if (it == worker_ids_.end() || it->second != identity) {
      log_->warn("leave from an unregistered peer claiming worker {}", rank);
      if (request_id != 0) {
        SendError(identity, request_id, proto::ErrorCode::UNAUTHENTICATED,
                  fmt::format("leave from a peer that has not registered as worker {}", rank));
      }
      return;
    }
    left_.insert(rank);
    unheard_.erase({static_cast<int>(proto::Role::WORKER), rank});  // done with the job
    if (request_id != 0) {  // acknowledged, so the worker may close its connection
      OutgoingMessage ack(0, request_id);
      ack.envelope().getBody().initLeave().setRank(rank);
      Send(identity, ack);
    }
    log_->info("worker {} left ({} of {})", rank, left_.size(), options_.num_workers);
    EndIfEveryWorkerIsDone();
    if (left_.size() < static_cast<size_t>(options_.num_workers)) return;
    for (const auto& id : server_ids_) {
      if (id.empty()) continue;
      OutgoingMessage msg(0, 0);
      msg.envelope().getBody().initLeave().setRank(0);
      Send(id, msg);
    }
    log_->info("every worker left; job finished");
    finished_ = true;
  }

  // A worker's connection closed before it left the job: its process is gone (it exited, most
  // often because another worker left the program early, or it was killed). A barrier can then
  // never be released: every open one fails at once with peerLeft, and so does every later one,
  // so that a worker waiting there -- one that left its program early, at its final barrier --
  // goes on to exit with its own status. Failing the job is for the launcher, which sees the
  // exits, or, under --from-env, for EndIfEveryWorkerIsDone and the heartbeats.
  void OnDrop(const std::string& identity) {
    if (watched_.contains(identity)) closed_.insert(identity);  // see Broadcast
    for (const auto& [rank, who] : worker_ids_) {
      if (who != identity || left_.contains(rank) || !gone_.insert(rank).second) continue;
      log_->warn("worker {}'s connection closed before it left the job: its process is gone; "
                 "no barrier can be released now",
                 rank);
      for (const auto& [id, arrivals] : barriers_) {
        for (const Waiter& a : arrivals) {
          SendError(a.identity, a.request_id, proto::ErrorCode::PEER_LEFT, GoneReason(rank));
        }
      }
      barriers_.clear();
    }
    EndIfEveryWorkerIsDone();
  }

  // Under --from-env (heartbeats, no launcher watching) nothing else would end a job whose
  // workers have all left or gone with some gone: it failed, and every process is told now
  // rather than after the gone ones' silence. With a launcher, the launcher has seen the exits
  // and reports the worker that failed.
  void EndIfEveryWorkerIsDone() {
    if (gone_.empty() || failure_ || monitor_ || options_.heartbeat_timeout.count() == 0 ||
        left_.size() + gone_.size() < static_cast<size_t>(options_.num_workers)) {
      return;
    }
    Fail(fmt::format("worker(s) {} exited without leaving the job (their own output says why); "
                     "every other worker has left",
                     fmt::join(gone_, ", ")),
         kExitJobFailed, Clock::now());
  }

  static std::string GoneReason(uint32_t rank) {
    return fmt::format(
        "worker {} exited without leaving the job (its connection to the coordinator closed), so "
        "no barrier can be released: did it stop because another worker left the program early, "
        "or was it killed?",
        rank);
  }

  // --- liveness (see coordinator.h) ---

  void OnHeartbeat(const std::string& identity, proto::Heartbeat::Reader hb) {
    if (hb.getSecret() != proof_) {
      SendError(identity, 0, proto::ErrorCode::UNAUTHENTICATED,
                "heartbeat with a wrong job secret");
      return;
    }
    const Clock::time_point now = Clock::now();
    const bool launcher = hb.getRole() == proto::Role::LAUNCHER;
    if (!launcher) {
      const std::pair<int, uint32_t> key{static_cast<int>(hb.getRole()), hb.getRank()};
      agents_heard_.insert(key);
      unheard_.erase(key);
    }
    if (hb.getLeaving()) {
      if (launcher && monitor_ == identity) monitor_.reset();
      if (watched_.erase(identity) > 0) {
        log_->debug("{} is done with the job",
                    DescribeProcess(hb.getRole(), hb.getRank(), hb.getPid(), hb.getHost().cStr()));
      }
      return;
    }
    if (launcher) {
      if (monitor_ != identity) log_->debug("the launcher watches the job");
      monitor_ = identity;
      monitor_last_seen_ = now;
    } else {
      auto [it, fresh] = watched_.try_emplace(identity);
      Watched& w = it->second;
      if (fresh) {
        w.what = DescribeProcess(hb.getRole(), hb.getRank(), hb.getPid(), hb.getHost().cStr());
        if (hb.getRole() == proto::Role::WORKER) w.worker = hb.getRank();
        log_->debug("watching {}", w.what);
      }
      w.last_seen = now;
      if (!all_heard_) heard_.insert({static_cast<int>(hb.getRole()), hb.getRank()});
    }
    OutgoingMessage ack(0, 0);
    ack.envelope().getBody().initHeartbeatAck().setSupervised(monitor_.has_value());
    Send(identity, ack);
    // A launcher that (re)appears after the failure still hears of it.
    if (launcher && failure_ && !broadcast_) SendJobFailed(identity);
    // So does a process heard for the first time after everyone was told (Broadcast).
    if (!launcher && broadcast_) {
      SendJobFailed(identity);
      if (!AwaitingAgents()) finished_ = true;
    }
  }

  void CheckLiveness(Clock::time_point now) {
    const LivenessTiming timing = LivenessTiming::For(options_.heartbeat_timeout);
    if (failure_) {
      if (broadcast_ && now >= broadcast_until_) finished_ = true;
      // The launcher was told but has not stopped the job (it is stuck, or gone): tell everyone.
      if (!broadcast_ && now - failed_at_ > options_.heartbeat_timeout) Broadcast();
      return;
    }
    if (monitor_ && now - monitor_last_seen_ > timing.silence) {
      log_->warn(
          "the launcher stopped answering ({:.1f} s); on a failure the processes will be "
          "told to stop by themselves",
          Seconds(now - monitor_last_seen_));
      monitor_.reset();
    }
    if (!all_heard_ &&
        now - started_at_ > std::max(options_.first_heartbeat_grace, timing.silence)) {
      CheckEveryoneHeard(now);
      if (failure_) return;
    }
    // Silent too long: a process heard before, or one that joined and has not been heard since.
    auto silent = [&](const Watched& w, std::string_view since) {
      if (now - w.last_seen <= timing.silence) return false;
      Fail(fmt::format("{} stopped answering: no heartbeat for {:.1f} s{} (heartbeat timeout "
                       "{:.1f} s)",
                       w.what, Seconds(now - w.last_seen), since,
                       Seconds(options_.heartbeat_timeout)),
           kExitUnresponsive, now);
      return true;
    };
    for (const auto& [identity, w] : watched_) {
      if (silent(w, "")) return;
    }
    for (const auto& [key, w] : unheard_) {
      if (silent(w, " since it joined the job")) return;
    }
  }

  // A process that never heartbeats nor registers (it hangs before joining, or never started)
  // fails the job too, once the start-up grace is over.
  void CheckEveryoneHeard(Clock::time_point now) {
    std::vector<std::string> missing;
    for (int i = 0; i < options_.num_servers; ++i) {
      if (!heard_.contains({static_cast<int>(proto::Role::SERVER), i})) {
        missing.push_back(fmt::format("server {}", i));
      }
    }
    for (int i = 0; i < options_.num_workers; ++i) {
      if (!heard_.contains({static_cast<int>(proto::Role::WORKER), i})) {
        missing.push_back(fmt::format("worker {}", i));
      }
    }
    if (missing.empty()) {
      all_heard_ = true;
      heard_.clear();
      return;
    }
    Fail(fmt::format("{} sent no heartbeat within {:.0f} s of the job's start (it hangs before "
                     "joining the job, or never started)",
                     fmt::join(missing, ", "), Seconds(now - started_at_)),
         kExitUnresponsive, now);
  }

  void Fail(const std::string& reason, int exit_code, Clock::time_point now) {
    failure_ = reason;
    exit_code_ = exit_code;
    failed_at_ = now;
    log_->error("{}; the job failed", reason);
    if (monitor_) {
      SendJobFailed(*monitor_);  // the launcher reports it and stops every process
    } else {
      Broadcast();
    }
  }

  void SendJobFailed(const std::string& identity) {
    OutgoingMessage msg(0, 0);
    auto f = msg.envelope().getBody().initJobFailed();
    f.setReason(*failure_);
    f.setExitCode(exit_code_);
    Send(identity, msg);
  }

  // Without a launcher to stop them, every process is told to exit; so is the coordinator.
  void Broadcast() {
    // Not to a closed connection: the message would wait there for the socket's linger.
    // Nor to a worker that has left (its agent's last heartbeat may still be on its way): it is
    // done, and exits with its own status; nor to one gone (its agent's connection may not be
    // seen closed yet, and a message queued there would hold the socket's close for its linger).
    for (const auto& [identity, w] : watched_) {
      if (closed_.contains(identity) ||
          (w.worker && (left_.contains(*w.worker) || gone_.contains(*w.worker)))) {
        continue;
      }
      SendJobFailed(identity);
    }
    if (monitor_) SendJobFailed(*monitor_);
    broadcast_ = true;
    // A process that joined but whose agent has not been heard yet (a job failing right after its
    // start) is told when its first heartbeat comes, for at most a silence; then the coordinator
    // ends.
    if (AwaitingAgents()) {
      broadcast_until_ = Clock::now() + LivenessTiming::For(options_.heartbeat_timeout).silence;
    } else {
      finished_ = true;
    }
  }

  // Whether a server, or a worker that neither left nor is gone, joined with heartbeats but its
  // agent has not been heard.
  bool AwaitingAgents() const {
    for (const auto& [key, w] : unheard_) {
      const bool worker = key.first == static_cast<int>(proto::Role::WORKER);
      if (!worker || (!left_.contains(key.second) && !gone_.contains(key.second))) return true;
    }
    return false;
  }

  struct Waiter {
    std::string identity;
    uint64_t request_id;
  };

  struct Watched {
    std::string what;  // DescribeProcess
    Clock::time_point last_seen;
    std::optional<uint32_t> worker;  // its rank, for a worker's agent
  };

  CoordinatorOptions options_;
  zmq::socket_t socket_;
  std::shared_ptr<spdlog::logger> log_;
  std::string endpoint_;
  std::string proof_;  // SecretProof(options_.secret): what registrations and heartbeats carry
  LogThrottle reject_log_;
  HandshakeWatch handshakes_;  // after socket_: stops watching before the socket closes

  // Loop-thread state.
  std::vector<std::string> server_endpoints_;
  // Where a worker's peers reach it (AnnouncePeer).
  struct PeerAddress {
    std::string endpoint, local_endpoint, host;
  };
  std::vector<PeerAddress> peer_endpoints_;  // by worker rank; see OnAnnouncePeer
  size_t peers_announced_ = 0;
  bool peers_complete_ = false;
  std::map<uint32_t, Waiter> peer_waiting_;  // by announced rank
  std::vector<std::string> server_ids_;
  size_t servers_registered_ = 0;
  std::map<uint32_t, std::string> worker_ids_;
  std::set<uint32_t> left_;
  std::set<uint32_t> gone_;  // workers whose connection closed before they left (OnDrop)
  std::map<int, std::string> connections_;  // identity by the connection's file descriptor
  std::set<std::string> closed_;             // watched_ identities whose connection closed
  std::vector<Waiter> waiting_;
  std::map<uint64_t, std::vector<Waiter>> barriers_;
  bool finished_ = false;
  // Liveness: the processes heartbeating, by identity (not the launcher).
  std::map<std::string, Watched> watched_;
  Clock::time_point started_at_;
  std::set<std::pair<int, uint32_t>> heard_;  // (role, rank) heard at least once
  // Registered with heartbeats, its agent not heard yet, by (role, rank); last_seen: the
  // registration. And every (role, rank) whose agent was heard.
  std::map<std::pair<int, uint32_t>, Watched> unheard_;
  std::set<std::pair<int, uint32_t>> agents_heard_;
  bool all_heard_ = false;
  std::optional<std::string> monitor_;  // the launcher's identity, while it heartbeats
  Clock::time_point monitor_last_seen_;
  std::optional<std::string> failure_;  // why the job failed
  Clock::time_point failed_at_;
  bool broadcast_ = false;  // every process was told
  Clock::time_point broadcast_until_;  // with broadcast_: when to end without waiting further
  std::atomic<int> exit_code_{0};

  NodeThread loop_;  // last: stopped (by ~Impl) before the state it uses goes away
};

Coordinator::Coordinator(CoordinatorOptions options, zmq::context_t& context)
    : impl_(std::make_unique<Impl>(std::move(options), context)) {}
Coordinator::~Coordinator() = default;
Status Coordinator::Start() { return impl_->Start(); }
const std::string& Coordinator::endpoint() const { return impl_->endpoint(); }
void Coordinator::WaitUntilDone() { impl_->WaitUntilDone(); }
void Coordinator::Stop() { impl_->Stop(); }
int Coordinator::exit_code() const { return impl_->exit_code(); }

}  // namespace tessera
