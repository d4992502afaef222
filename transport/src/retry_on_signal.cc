#include "tessera/transport/retry_on_signal.h"

#include <cerrno>

namespace tessera {
namespace {

// `call` again while a signal interrupts it.
template <typename Call>
bool Retrying(Call call) {
  for (;;) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

}  // namespace

bool ReceiveRetrying(zmq::socket_t& socket, zmq::message_t& frame, zmq::recv_flags flags) {
  return Retrying([&] { return socket.recv(frame, flags).has_value(); });
}

bool SendRetrying(zmq::socket_t& socket, zmq::message_t& frame, zmq::send_flags flags) {
  return Retrying([&] { return socket.send(frame, flags).has_value(); });
}

bool SendRetrying(zmq::socket_t& socket, zmq::message_t&& frame, zmq::send_flags flags) {
  return SendRetrying(socket, frame, flags);
}

bool SendRetrying(zmq::socket_t& socket, zmq::const_buffer bytes, zmq::send_flags flags) {
  return Retrying([&] { return socket.send(bytes, flags).has_value(); });
}

}  // namespace tessera
