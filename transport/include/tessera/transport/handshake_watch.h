// HandshakeWatch: the trace of strangers. With a job secret, ZeroMQ refuses a connection that
// fails the CURVE handshake (no secret, a wrong one, an HTTP request, garbage) before any of it
// reaches Tessera's code; this watches a bound socket's monitor events and logs each refusal,
// rate-limited (LogThrottle), so an operator sees who knocks and the node goes on. ZeroMQ also
// closes a connection that sends a frame over the socket's ZMQ_MAXMSGSIZE, or breaks ZMTP's
// framing after the handshake, and reports it as a plain ZMQ_EVENT_DISCONNECTED; the node, which
// knows which connections may close (a worker that left), names the others with LogDrop.
//
// Thread safety: none; the thread that polls the socket's node owns the watch.
#ifndef TESSERA_TRANSPORT_HANDSHAKE_WATCH_H_
#define TESSERA_TRANSPORT_HANDSHAKE_WATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "tessera/common/log_throttle.h"

namespace spdlog {
class logger;
}

namespace tessera {

class HandshakeWatch {
 public:
  // Another event of the watched socket (ZMQ_EVENT_*, its value: a file descriptor for
  // connection events).
  using EventHandler = std::function<void(uint16_t event, uint32_t value)>;

  // Watches `socket` (call before it binds; it must outlive the watch). `what` names the node in
  // the log line ("coordinator", "peer-mesh inbox"). `also`: more ZMQ_EVENT_* bits to watch,
  // handed to Drain's handler (a socket has one monitor, so its other watchers share this one).
  HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket, std::string what,
                 std::shared_ptr<spdlog::logger> log, int also = 0);
  ~HandshakeWatch();
  HandshakeWatch(const HandshakeWatch&) = delete;
  HandshakeWatch& operator=(const HandshakeWatch&) = delete;

  // Readable when events are waiting (for zmq_poll; or poll(2) on its fd, then Drain()).
  zmq::pollitem_t poll_item();
  // Its file descriptor, for poll(2): edge-triggered, so Drain() whenever it fires.
  int fd();
  // Logs the refusals that arrived and hands the other events to `other`. Never blocks. The
  // disconnection that follows a refusal (ZeroMQ reports both) is not handed on.
  void Drain(const EventHandler& other = {});
  // Connections refused so far (those drained).
  uint64_t refused() const { return refused_; }

  // Logs, rate-limited, that the connection `fd` to `endpoint` (this socket's) closed when the
  // node did not expect it to; `who` names the peer ("worker 2", "a connection that sent no
  // message"). The line names the socket and the frame bound ZeroMQ enforced.
  void LogDrop(const std::string& endpoint, uint32_t fd, const std::string& who);
  // Connections logged by LogDrop so far.
  uint64_t drops() const { return drops_; }

 private:
  zmq::socket_t& socket_;
  zmq::socket_t events_;
  std::string what_;
  std::shared_ptr<spdlog::logger> log_;
  LogThrottle throttle_;
  uint64_t refused_ = 0;
  bool watch_disconnects_ = false;
  uint64_t refusals_to_close_ = 0;  // refusals whose disconnection has not come yet
  LogThrottle drop_throttle_;
  uint64_t drops_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_HANDSHAKE_WATCH_H_
