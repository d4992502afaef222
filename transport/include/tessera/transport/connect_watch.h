// ConnectWatch: the first connection of connecting sockets, awaited. ZeroMQ connects in the
// background and retries for ever, so a process told an endpoint that does not route from its host
// (another network's private address, a wrong --advertise, a port a firewall drops) would wait for
// answers that never come, until some long time-out names the wrong thing. A watch names the
// endpoint and the peer behind it within kConnectLimit instead.
//
// Only tcp:// endpoints are watched: inproc:// and ipc:// connect or fail at once.
// Thread safety: none; one thread watches, checks and destroys the watch. The watched sockets
// must outlive the watch's last Check/Await (or the watch itself).
#ifndef TESSERA_TRANSPORT_CONNECT_WATCH_H_
#define TESSERA_TRANSPORT_CONNECT_WATCH_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "tessera/common/status.h"

namespace tessera {

// How long a peer that has published its endpoint may take to accept a TCP connection. A bound
// socket accepts at once (the kernel completes the handshake), so this is ample on a loaded
// machine and still "within seconds".
inline constexpr std::chrono::milliseconds kConnectLimit{5000};

class ConnectWatch {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ConnectWatch(zmq::context_t& context, std::chrono::milliseconds limit = kConnectLimit);
  ~ConnectWatch();
  ConnectWatch(const ConnectWatch&) = delete;
  ConnectWatch& operator=(const ConnectWatch&) = delete;

  // Watches `socket`'s connection to `endpoint`: call just before socket.connect(endpoint).
  // `what` names the peer in the error ("server 0", "worker 1's peer-mesh inbox"). The limit runs
  // from this call.
  void Watch(zmq::socket_t& socket, std::string what, std::string endpoint);

  // Reads the connection events that arrived; never blocks. Ok once every watched socket has
  // connected; Unavailable once one has not within the limit, naming it, the endpoint and this
  // host, e.g. "cannot reach server 0 at tcp://10.0.0.7:4100 from node2: no connection within
  // 5 s (3 attempts failed). ..."; nullopt meanwhile. After a result it stops watching.
  std::optional<Status> Check();

  // Blocks until Check has a result.
  Status Await();

 private:
  struct Watched {
    void* socket;  // the watched socket's handle (stable when its socket_t moves)
    zmq::socket_t events;
    std::string what;
    std::string endpoint;
    Clock::time_point since;
    int failed = 0;
    bool connected = false;
  };
  void Stop();

  zmq::context_t& context_;
  const std::chrono::milliseconds limit_;
  const std::string host_;
  std::vector<Watched> watched_;
};

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_CONNECT_WATCH_H_
