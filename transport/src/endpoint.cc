#include "tessera/transport/endpoint.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <unistd.h>

#include <cstdlib>

#include "tessera/transport/socket_limits.h"

namespace tessera {
namespace {

// The address peers should use when this process bound to a wildcard address.
std::string AdvertiseHost() {
  const char* env = std::getenv(kEnvAdvertiseHost);
  if (env != nullptr && *env != '\0') return env;
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) == 0) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* result = nullptr;
    if (::getaddrinfo(name, nullptr, &hints, &result) == 0 && result != nullptr) {
      char text[INET_ADDRSTRLEN] = {0};
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(result->ai_addr)->sin_addr, text,
                  sizeof(text));
      ::freeaddrinfo(result);
      if (text[0] != '\0') return text;
    }
  }
  return "127.0.0.1";
}

// Where the port of `bound` starts (its last ':') when its host is a wildcard, else npos.
size_t WildcardPortColon(const std::string& bound) {
  constexpr std::string_view kTcp = "tcp://";
  if (!bound.starts_with(kTcp)) return std::string::npos;
  const size_t colon = bound.rfind(':');
  if (colon == std::string::npos || colon < kTcp.size()) return std::string::npos;
  const std::string_view host = std::string_view(bound).substr(kTcp.size(), colon - kTcp.size());
  const bool wildcard = host == "0.0.0.0" || host == "*" || host == "[::]" || host == "::";
  return wildcard ? colon : std::string::npos;
}

}  // namespace

std::string AdvertisedEndpoint(const std::string& bound, const std::string& advertise_host) {
  const size_t colon = WildcardPortColon(bound);
  if (colon == std::string::npos || advertise_host.empty()) return bound;
  const bool v6 = advertise_host.find(':') != std::string::npos && advertise_host.front() != '[';
  return "tcp://" + (v6 ? "[" + advertise_host + "]" : advertise_host) + bound.substr(colon);
}

Result<std::string> BindSocket(zmq::socket_t& socket, const std::string& endpoint) {
  std::string ep = endpoint;
  // "tcp://host:0" is our spelling of an ephemeral port; ZeroMQ spells it "tcp://host:*".
  if (ep.starts_with("tcp://") && ep.ends_with(":0")) ep = ep.substr(0, ep.size() - 1) + "*";
  try {
    socket.bind(ep);
    const std::string bound = socket.get(zmq::sockopt::last_endpoint);
    if (WildcardPortColon(bound) == std::string::npos) return bound;
    return AdvertisedEndpoint(bound, AdvertiseHost());
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
  socket.set(zmq::sockopt::handshake_ivl, kHandshakeTimeoutMs);
}

void ConfigureControlSocket(zmq::socket_t& socket) {
  ConfigureSocket(socket);
  socket.set(zmq::sockopt::maxmsgsize, kMaxControlMessageBytes);
}

void LimitIncoming(zmq::socket_t& socket, int64_t max_message_bytes, int receive_queue) {
  socket.set(zmq::sockopt::maxmsgsize, max_message_bytes);
  socket.set(zmq::sockopt::rcvhwm, receive_queue);
}

}  // namespace tessera
