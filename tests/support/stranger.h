// A stranger on the network, for security tests: connects to a job's port with the wrong job
// secret (or none) and reports how its handshake ended, from the socket's own monitor events;
// or sends raw bytes over plain TCP, as a port scanner or an HTTP health check would.
#ifndef TESSERA_TESTS_SUPPORT_STRANGER_H_
#define TESSERA_TESTS_SUPPORT_STRANGER_H_

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "tessera/transport/endpoint.h"
#include "tessera/transport/security.h"

namespace tessera::testing {

enum class Handshake { kSucceeded, kFailed, kUndecided };

// The monitor events of one socket (ZeroMQ's own account of its connections).
class SocketEvents {
 public:
  static constexpr int kHandshakeEvents = ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED;
  // Call before the socket connects.
  SocketEvents(zmq::context_t& context, zmq::socket_t& socket, int mask = kHandshakeEvents)
      : socket_(socket), events_(context, zmq::socket_type::pair) {
    static std::atomic<int> counter{0};
    const std::string ep = "inproc://stranger-monitor-" + std::to_string(counter++);
    EXPECT_EQ(zmq_socket_monitor(socket.handle(), ep.c_str(), mask), 0);
    events_.connect(ep);
  }
  ~SocketEvents() { zmq_socket_monitor(socket_.handle(), nullptr, 0); }
  SocketEvents(const SocketEvents&) = delete;
  SocketEvents& operator=(const SocketEvents&) = delete;

  // The next event's id, or 0 if none comes within `within`.
  uint16_t Next(std::chrono::milliseconds within = std::chrono::seconds(20)) {
    zmq::pollitem_t item{events_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, within) <= 0) return 0;
    zmq::message_t event, address;
    (void)events_.recv(event);
    (void)events_.recv(address);
    uint16_t id = 0;
    std::memcpy(&id, event.data(), sizeof(id));
    return id;
  }

 private:
  zmq::socket_t& socket_;
  zmq::socket_t events_;
};

// Connects a `type` socket to `endpoint` holding the keys of `secret` (none if empty), sends
// `payload` (queued until a handshake succeeds), and waits up to `within` for the handshake's
// outcome. The socket is closed on return: what it queued is dropped.
inline Handshake ConnectAndSend(zmq::context_t& context, const std::string& endpoint,
                                const std::string& secret, const std::string& payload,
                                zmq::socket_type type = zmq::socket_type::dealer,
                                std::chrono::milliseconds within = std::chrono::seconds(20)) {
  zmq::socket_t socket(context, type);
  ConfigureSocket(socket);
  SecureConnectSide(socket, secret);
  SocketEvents events(context, socket);
  socket.connect(endpoint);
  (void)socket.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  const uint16_t id = events.Next(within);
  if (id == 0) return Handshake::kUndecided;
  return id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED ? Handshake::kSucceeded : Handshake::kFailed;
}

// Sends `bytes` over a plain TCP connection to `endpoint` ("tcp://127.0.0.1:PORT") and closes
// it. False if the connection could not be made.
inline bool SendRawTcp(const std::string& endpoint, const std::string& bytes) {
  const size_t colon = endpoint.rfind(':');
  const std::string host = endpoint.substr(6, colon - 6);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  for (size_t sent = 0; ok && sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    ok = n > 0;
    if (ok) sent += static_cast<size_t>(n);
  }
  ::close(fd);
  return ok;
}

// Opens a plain TCP connection to `endpoint`, sends nothing, and reads (ZeroMQ's greeting) until
// the other side closes it: how long that took, or nullopt if it was not closed within `within`
// (or no connection could be made).
inline std::optional<std::chrono::milliseconds> HoldRawTcpUntilClosed(
    const std::string& endpoint, std::chrono::milliseconds within) {
  const size_t colon = endpoint.rfind(':');
  const std::string host = endpoint.substr(6, colon - 6);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return std::nullopt;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + within;
  std::optional<std::chrono::milliseconds> closed;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    char buf[256];
    for (auto now = start; now < deadline && !closed; now = std::chrono::steady_clock::now()) {
      pollfd p{fd, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      if (::poll(&p, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
      if (::recv(fd, buf, sizeof(buf), 0) <= 0) {
        closed = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
      }
    }
  }
  ::close(fd);
  return closed;
}

// A ZMTP 3.0 greeting offering `mechanism` ("NULL", "CURVE"), then the header of a command frame
// claiming `claimed` bytes: a stranger who speaks ZeroMQ making a receiver allocate that much
// before any handshake is done. ZeroMQ compares the size with ZMQ_MAXMSGSIZE first.
inline std::string OversizedZmtpFrame(const std::string& mechanism, uint64_t claimed) {
  std::string bytes(64, '\0');
  bytes[0] = '\xff';  // signature
  bytes[9] = '\x7f';
  bytes[10] = 3;  // version 3.0
  bytes.replace(12, mechanism.size(), mechanism);
  bytes += '\x06';  // a command, long size
  for (int shift = 56; shift >= 0; shift -= 8)
    bytes += static_cast<char>((claimed >> shift) & 0xff);
  return bytes;
}

// ~300 bytes of an HTTP request, as a load balancer's health check sends.
inline std::string HttpHealthCheck() {
  return "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kube-probe/1.27\r\n"
         "Accept: */*\r\nConnection: close\r\nX-Forwarded-For: 10.0.0.1\r\n"
         "X-Request-Id: 6f1c2a9e-0d4b-4d8e-9a5b-3c2f1e0d9c8b\r\nAccept-Encoding: gzip\r\n"
         "Cache-Control: no-cache\r\nPragma: no-cache\r\n\r\n";
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_SUPPORT_STRANGER_H_
