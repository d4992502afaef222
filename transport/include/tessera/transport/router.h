// Sending and receiving envelopes on a ROUTER socket, where each message is preceded by the
// peer's identity frame.
#ifndef TESSERA_TRANSPORT_ROUTER_H_
#define TESSERA_TRANSPORT_ROUTER_H_

#include <optional>
#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/transport/message.h"

namespace tessera {

struct RoutedFrame {
  std::string identity;
  zmq::message_t payload;
  bool multipart = false;  // the peer sent more than one frame; the rest were dropped
  // Set when a message of several frames (parts.h) added up to more than the bound it was
  // received with; payload is empty then.
  Status oversized;
  int fd = -1;  // the connection it came on (tcp and ipc), as ZeroMQ's monitor events name it
};

// The next message, or std::nullopt when none is waiting. Never blocks. With `join_up_to` > 0 a
// message of several frames (SendInParts) is joined into payload if it has at most that many
// bytes; with 0 (control sockets) only its first frame is kept and `multipart` is set.
std::optional<RoutedFrame> TryReceiveRouted(zmq::socket_t& router, int64_t join_up_to = 0);

// Sends `msg` to the peer `identity`. Unavailable when the peer is gone (with
// ZMQ_ROUTER_MANDATORY set, ZeroMQ reports EHOSTUNREACH instead of dropping the message).
Status SendRouted(zmq::socket_t& router, const std::string& identity, OutgoingMessage& msg);
Status SendRouted(zmq::socket_t& router, const std::string& identity, zmq::message_t frame);
// As above, with send_flags::dontwait: FailedPrecondition ("queue full"), nothing sent, when the
// socket's queue for that peer is at its high-water mark (with ZMQ_ROUTER_MANDATORY; without it
// ZeroMQ drops the message silently).
Status SendRouted(zmq::socket_t& router, const std::string& identity, zmq::message_t frame,
                  zmq::send_flags flags);

// The wire error code for a frame that IncomingMessage::Parse rejected with `status`.
proto::ErrorCode ParseErrorCode(const Status& status);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_ROUTER_H_
