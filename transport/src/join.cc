#include "tessera/transport/join.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "tessera/transport/message.h"
#include "tessera/transport/security.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace {

// The handshakes of a connecting socket: refusals since the last success.
class HandshakeOutcomes : public zmq::monitor_t {
 public:
  bool watching() const { return watching_; }
  int refused_in_a_row() const { return refused_; }
  const std::string& address() const { return address_; }
  const std::string& last_reason() const { return reason_; }

  void on_monitor_started() override { watching_ = true; }
  void on_event_handshake_failed_no_detail(const zmq_event_t& e, const char* addr) override {
    Refused(addr, fmt::format("connection closed: {}", std::strerror(e.value)));
  }
  void on_event_handshake_failed_protocol(const zmq_event_t& e, const char* addr) override {
    Refused(addr, e.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                      ? std::string("it runs no CURVE")
                      : fmt::format("ZMTP error {:#x}", e.value));
  }
  void on_event_handshake_failed_auth(const zmq_event_t& e, const char* addr) override {
    Refused(addr, fmt::format("authentication status {}", e.value));
  }
  void on_event_handshake_succeeded(const zmq_event_t&, const char*) override { refused_ = 0; }

 private:
  void Refused(const char* addr, std::string reason) {
    ++refused_;
    address_ = addr;
    reason_ = std::move(reason);
  }
  bool watching_ = false;
  int refused_ = 0;
  std::string address_;
  std::string reason_;
};

}  // namespace

Result<JobMembership> JoinJob(zmq::socket_t& coordinator, const JoinRequest& request,
                              std::chrono::milliseconds timeout) {
  OutgoingMessage reg(request.rank, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(request.role);
  r.setRank(request.rank);
  r.setEndpoint(request.endpoint);
  r.setSecret(SecretProof(request.secret));
  coordinator.send(reg.ToFrame(), zmq::send_flags::none);

  // The connection's handshakes are watched: a coordinator with another secret (or none) refuses
  // each one, which says more, and sooner, than a time-out. (A process without a secret facing a
  // coordinator with one sees no refusal on its side: it times out.)
  HandshakeOutcomes handshakes;
  {
    try {
      handshakes.init(coordinator, fmt::format("inproc://tessera-join-{}", coordinator.handle()),
                      ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    } catch (const zmq::error_t&) {
      // Not watched: a wrong secret then shows as the time-out below.
    }
  }
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
      if (handshakes.refused_in_a_row() >= kJoinHandshakeRefusals) {
        return Status::FailedPrecondition(fmt::format(
            "the coordinator at {} refused this process's connection {} times in its handshake "
            "({}): {}; every process of a job needs the same TESSERA_JOB_SECRET",
            handshakes.address(), handshakes.refused_in_a_row(), handshakes.last_reason(),
            "it runs with another job secret, or none (--insecure)"));
      }
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
  (void)coordinator.recv(frame, zmq::recv_flags::none);
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
