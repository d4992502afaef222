#include "tessera/transport/router.h"

#include "tessera/transport/frame_handover.h"

namespace tessera {

std::optional<RoutedFrame> TryReceiveRouted(zmq::socket_t& router) {
  RoutedFrame frame;
  zmq::message_t identity;
  if (!router.recv(identity, zmq::recv_flags::dontwait)) return std::nullopt;
  frame.identity = identity.to_string();
  // A ROUTER always delivers the identity and at least one more frame together.
  if (!identity.more() || !router.recv(frame.payload, zmq::recv_flags::none)) return frame;
  while (frame.payload.more()) {
    frame.multipart = true;
    zmq::message_t extra;
    (void)router.recv(extra, zmq::recv_flags::none);
    if (!extra.more()) break;
  }
  return frame;
}

Status SendRouted(zmq::socket_t& router, const std::string& identity, OutgoingMessage& msg) {
  return SendRouted(router, identity, msg.ToFrame());
}

Status SendRouted(zmq::socket_t& router, const std::string& identity, zmq::message_t frame) {
  MarkFrameSent(frame);  // it may have been built elsewhere than by ToFrame
  try {
    router.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    router.send(frame, zmq::send_flags::none);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(e.what());
  }
}

proto::ErrorCode ParseErrorCode(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? proto::ErrorCode::VERSION_MISMATCH
                                                       : proto::ErrorCode::MALFORMED;
}

}  // namespace tessera
