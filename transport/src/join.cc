#include "tessera/transport/join.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "tessera/transport/message.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/security.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace {

// The handshakes of a connecting socket: refusals since the last success.
class HandshakeOutcomes : public zmq::monitor_t {
 public:
  bool watching() const { return watching_; }
  int refused_in_a_row() const { return refused_; }
  // Whether the last refusal was a mechanism mismatch: one side runs CURVE (has a job secret),
  // the other does not. ZeroMQ never retries such a connection.
  bool mechanism_mismatch() const { return mismatch_; }
  const std::string& address() const { return address_; }
  const std::string& last_reason() const { return reason_; }

  void on_monitor_started() override { watching_ = true; }
  void on_event_handshake_failed_no_detail(const zmq_event_t& e, const char* addr) override {
    Refused(addr, fmt::format("connection closed: {}", std::strerror(e.value)));
  }
  void on_event_handshake_failed_protocol(const zmq_event_t& e, const char* addr) override {
    Refused(addr, e.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                      ? std::string("security mechanisms differ")
                      : fmt::format("ZMTP error {:#x}", e.value));
    mismatch_ = e.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH;
  }
  void on_event_handshake_failed_auth(const zmq_event_t& e, const char* addr) override {
    Refused(addr, fmt::format("authentication status {}", e.value));
  }
  void on_event_handshake_succeeded(const zmq_event_t&, const char*) override { refused_ = 0; }

 private:
  void Refused(const char* addr, std::string reason) {
    ++refused_;
    mismatch_ = false;
    address_ = addr;
    reason_ = std::move(reason);
  }
  bool watching_ = false;
  int refused_ = 0;
  bool mismatch_ = false;
  std::string address_;
  std::string reason_;
};

// Why the handshakes `h` watched fail the join, or Ok if they do not (yet).
Status RefusalStatus(const HandshakeOutcomes& h, const JoinRequest& request) {
  if (h.mechanism_mismatch()) {
    return Status::FailedPrecondition(fmt::format(
        "the coordinator at {} refused this process's connection in its handshake ({}): {}; "
        "every process of a job needs the same TESSERA_JOB_SECRET",
        h.address(), h.last_reason(),
        request.secret.empty()
            ? "this process has no job secret and the coordinator has one"
            : "this process has a job secret and the coordinator has none (--insecure)"));
  }
  if (h.refused_in_a_row() >= kJoinHandshakeRefusals) {
    return Status::FailedPrecondition(fmt::format(
        "the coordinator at {} refused this process's connection {} times in its handshake "
        "({}): {}; every process of a job needs the same TESSERA_JOB_SECRET",
        h.address(), h.refused_in_a_row(), h.last_reason(),
        "it runs with another job secret, or none (--insecure)"));
  }
  return Status::Ok();
}

}  // namespace

Result<JobMembership> JoinJob(zmq::socket_t& coordinator, const std::string& endpoint,
                              const JoinRequest& request, std::chrono::milliseconds timeout) {
  // The connection's handshakes are watched from before it connects (ZeroMQ reports a mechanism
  // mismatch once and never retries): a coordinator with another secret, or with a secret when
  // this process has none, or the reverse, refuses them, which says more, and sooner, than a
  // time-out.
  HandshakeOutcomes handshakes;
  try {
    handshakes.init(coordinator, fmt::format("inproc://tessera-join-{}", coordinator.handle()),
                    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  } catch (const zmq::error_t&) {
    // Not watched: a refused handshake then shows as the time-out below.
  }
  try {
    coordinator.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument(
        fmt::format("cannot connect to coordinator {}: {}", endpoint, e.what()));
  }
  OutgoingMessage reg(request.rank, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(request.role);
  r.setRank(request.rank);
  r.setEndpoint(request.endpoint);
  r.setSecret(SecretProof(request.secret));
  if (request.heartbeats) {
    r.setHeartbeats(true);
    r.setPid(static_cast<uint32_t>(::getpid()));
    char host[256] = {};
    r.setHost(::gethostname(host, sizeof(host) - 1) == 0 ? host : "?");
  }
  SendRetrying(coordinator, reg.ToFrame(), zmq::send_flags::none);

  zmq::pollitem_t item{coordinator.handle(), 0, ZMQ_POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int ready = 0;
  while (ready == 0 && std::chrono::steady_clock::now() < deadline) {  // a signal ends a poll early
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (handshakes.watching()) wait = std::min(wait, std::chrono::milliseconds(20));
    ready = PollItems(&item, 1, wait);
    if (ready == 0 && handshakes.watching()) {
      try {
        while (handshakes.check_event(0)) {
        }
      } catch (const zmq::error_t&) {
        // A signal interrupted the check (EINTR): the next round checks again.
      }
      if (Status refused = RefusalStatus(handshakes, request); !refused.ok()) return refused;
    }
  }
  if (ready == 0) {
    return Status::Unavailable(
        fmt::format("no membership from the coordinator within {} ms{}", timeout.count(),
                    request.secret.empty()
                        ? ""
                        : " (is it running, and does it have the same job secret? a process with "
                          "another secret cannot connect)"));
  }
  zmq::message_t frame;
  (void)ReceiveRetrying(coordinator, frame, zmq::recv_flags::none);
  auto msg = IncomingMessage::Parse(std::move(frame));
  if (!msg.ok()) return msg.status();
  try {
    auto body = (*msg)->envelope().getBody();
    if (body.isError()) return StatusFromError(body.getError());
    if (!body.isMembership())
      return Status::Internal("the coordinator answered the registration with something else");
    JobMembership membership;
    for (auto ep : body.getMembership().getServers()) membership.servers.emplace_back(ep);
    membership.num_workers = body.getMembership().getNumWorkers();
    return membership;
  } catch (const kj::Exception& e) {
    return Status::DataLoss(fmt::format("malformed membership: {}", e.getDescription().cStr()));
  }
}

}  // namespace tessera
