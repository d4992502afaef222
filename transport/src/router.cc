#include "tessera/transport/router.h"

#include <cstdlib>

#include "tessera/transport/frame_handover.h"
#include "tessera/transport/parts.h"
#include "tessera/transport/retry_on_signal.h"

namespace tessera {

std::optional<RoutedFrame> TryReceiveRouted(zmq::socket_t& router, int64_t join_up_to) {
  RoutedFrame frame;
  zmq::message_t identity;
  if (!ReceiveRetrying(router, identity, zmq::recv_flags::dontwait)) return std::nullopt;
  frame.identity = identity.to_string();
  // A ROUTER always delivers the identity and at least one more frame together.
  if (!identity.more() || !ReceiveRetrying(router, frame.payload, zmq::recv_flags::none))
    return frame;
  if (const char* fd = zmq_msg_gets(frame.payload.handle(), "__fd"); fd != nullptr) {
    frame.fd = std::atoi(fd);
  }
  if (join_up_to > 0) {
    Result<zmq::message_t> whole = ReceiveRest(router, std::move(frame.payload), join_up_to);
    if (whole.ok()) {
      frame.payload = std::move(whole).value();
    } else {
      frame.payload = zmq::message_t();
      frame.oversized = whole.status();
    }
    return frame;
  }
  while (frame.payload.more()) {
    frame.multipart = true;
    zmq::message_t extra;
    (void)ReceiveRetrying(router, extra, zmq::recv_flags::none);
    if (!extra.more()) break;
  }
  return frame;
}

Status SendRouted(zmq::socket_t& router, const std::string& identity, OutgoingMessage& msg) {
  return SendRouted(router, identity, msg.ToFrame());
}

Status SendRouted(zmq::socket_t& router, const std::string& identity, zmq::message_t frame) {
  return SendRouted(router, identity, std::move(frame), zmq::send_flags::none);
}

Status SendRouted(zmq::socket_t& router, const std::string& identity, zmq::message_t frame,
                  zmq::send_flags flags) {
  MarkFrameSent(frame);  // it may have been built elsewhere than by ToFrame
  try {
    // Only a message's first frame can find the queue full: the rest follow it.
    if (!SendRetrying(router, zmq::buffer(identity), flags | zmq::send_flags::sndmore)) {
      return Status::FailedPrecondition("queue full");
    }
    SendRetrying(router, frame, flags);
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
