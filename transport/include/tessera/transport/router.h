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
};

// The next message, or std::nullopt when none is waiting. Never blocks.
std::optional<RoutedFrame> TryReceiveRouted(zmq::socket_t& router);

// Sends `msg` to the peer `identity`. Unavailable when the peer is gone (with
// ZMQ_ROUTER_MANDATORY set, ZeroMQ reports EHOSTUNREACH instead of dropping the message).
Status SendRouted(zmq::socket_t& router, const std::string& identity, OutgoingMessage& msg);
Status SendRouted(zmq::socket_t& router, const std::string& identity, zmq::message_t frame);

// The wire error code for a frame that IncomingMessage::Parse rejected with `status`.
proto::ErrorCode ParseErrorCode(const Status& status);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_ROUTER_H_
