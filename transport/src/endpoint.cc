#include "tessera/transport/endpoint.h"

#include <fmt/format.h>

namespace tessera {

Result<std::string> BindSocket(zmq::socket_t& socket, const std::string& endpoint) {
  std::string ep = endpoint;
  // "tcp://host:0" is our spelling of an ephemeral port; ZeroMQ spells it "tcp://host:*".
  if (ep.starts_with("tcp://") && ep.ends_with(":0")) ep = ep.substr(0, ep.size() - 1) + "*";
  try {
    socket.bind(ep);
    return socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument(fmt::format("cannot bind {}: {}", endpoint, e.what()));
  }
}

void ConfigureSocket(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::rcvhwm, 0);
  socket.set(zmq::sockopt::heartbeat_ivl, 1000);
  socket.set(zmq::sockopt::heartbeat_timeout, 5000);
}

void LimitIncoming(zmq::socket_t& socket, int64_t max_message_bytes, int receive_queue) {
  socket.set(zmq::sockopt::maxmsgsize, max_message_bytes);
  socket.set(zmq::sockopt::rcvhwm, receive_queue);
}

}  // namespace tessera
