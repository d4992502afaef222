#include "tessera/transport/handshake_watch.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "tessera/transport/retry_on_signal.h"

namespace tessera {
namespace {

constexpr int kRefusals = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

std::string Why(uint16_t event, uint32_t value) {
  switch (event) {
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      return value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
                 ? "its CURVE handshake failed (another job secret?)"
                 : fmt::format(
                       "it does not speak this job's protocol (ZMTP error {:#x}: no job "
                       "secret, or not ZeroMQ)",
                       value);
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      return fmt::format("authentication failed ({})", value);
    default:
      return fmt::format("its handshake failed ({})", std::strerror(static_cast<int>(value)));
  }
}

}  // namespace

HandshakeWatch::HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket, std::string what,
                               std::shared_ptr<spdlog::logger> log, int also)
    : socket_(socket),
      events_(context, zmq::socket_type::pair),
      what_(std::move(what)),
      log_(std::move(log)),
      watch_disconnects_((also & ZMQ_EVENT_DISCONNECTED) != 0) {
  // Unique within the context: the socket's address.
  const std::string endpoint = fmt::format("inproc://tessera-handshakes-{}", socket.handle());
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), kRefusals | also) != 0) {
    log_->warn("{}: cannot watch handshakes: {}", what_, zmq_strerror(zmq_errno()));
    return;
  }
  events_.set(zmq::sockopt::linger, 0);
  events_.connect(endpoint);
}

HandshakeWatch::~HandshakeWatch() { zmq_socket_monitor(socket_.handle(), nullptr, 0); }

zmq::pollitem_t HandshakeWatch::poll_item() {
  return zmq::pollitem_t{events_.handle(), 0, ZMQ_POLLIN, 0};
}

int HandshakeWatch::fd() { return events_.get(zmq::sockopt::fd); }

void HandshakeWatch::Drain(const EventHandler& other) {
  zmq::message_t event;
  while (ReceiveRetrying(events_, event, zmq::recv_flags::dontwait)) {
    zmq::message_t address;
    if (event.more()) (void)ReceiveRetrying(events_, address, zmq::recv_flags::dontwait);
    if (event.size() < 6) continue;
    uint16_t id = 0;
    uint32_t value = 0;
    std::memcpy(&id, event.data(), sizeof(id));
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof(value));
    if ((id & kRefusals) == 0) {
      // ZeroMQ's single I/O thread reports a refused connection's disconnection right after
      // its refusal, with no other event between.
      if (id == ZMQ_EVENT_DISCONNECTED && refusals_to_close_ > 0) {
        --refusals_to_close_;
        continue;
      }
      if (other) other(id, value);
      continue;
    }
    ++refused_;
    if (watch_disconnects_) ++refusals_to_close_;
    if (throttle_.Allow()) {
      log_->warn("{}: refused a connection to {}: {}{}", what_, address.to_string(), Why(id, value),
                 throttle_.TakeSuppressedNote());
    }
  }
}

void HandshakeWatch::LogDrop(const std::string& endpoint, uint32_t fd, const std::string& who) {
  ++drops_;
  if (!drop_throttle_.Allow()) return;
  log_->warn(
      "{} {}: {} (fd {}) was closed: ZeroMQ closes a connection that sends a frame over this "
      "socket's bound of {} bytes, or breaks its framing, and reports no more than that; or the "
      "peer went away{}",
      what_, endpoint, who, fd, socket_.get(zmq::sockopt::maxmsgsize),
      drop_throttle_.TakeSuppressedNote());
}

}  // namespace tessera
