// A client's sockets: one DEALER to the coordinator and one to each server, shared by the
// callers' threads and the I/O thread.
//
// Contract: Send keeps the order of every message sent to a target (a caller sends itself when
// no other thread uses the sockets, else queues for whoever holds them next). Receiving is
// Drain (read what the sockets hold) and Poll (sleep until a socket or a waker signals), called
// by the thread that holds the receive role (receive_role.h). A ZMQ_FD signals only that a
// socket's state may have changed, and only once: the receiver drains after waking, and a
// sender whose send may have consumed a signal checks the socket and wakes the receiver.
// Every method may be called concurrently, except Drain and Poll (the receive role's).
#ifndef TESSERA_CLIENT_SRC_SOCKETS_H_
#define TESSERA_CLIENT_SRC_SOCKETS_H_

#include <poll.h>
#include <spdlog/spdlog.h>
#include <tbb/concurrent_queue.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "client_counters.h"
#include "tessera/common/status.h"
#include "tessera/transport/connect_watch.h"
#include "tessera/transport/waker.h"

namespace tessera::client_internal {

// The target of a message: a server's index, or the coordinator.
constexpr int kCoordinator = -1;

struct Outbound {
  int target;  // server index, or kCoordinator
  zmq::message_t frame;
  bool early = false;  // an update batch sent from spare budget
};

class ClientSockets {
 public:
  // `io_waker` wakes the I/O thread for queued sends; every byte sent is counted in `counters`
  // and added to `unbudgeted_bytes` (managed communication's budget spends it).
  ClientSockets(zmq::context_t& context, Waker& io_waker, ClientCounters& counters,
                std::atomic<uint64_t>& unbudgeted_bytes, std::shared_ptr<spdlog::logger> log);

  // `secret`: the job secret, which authenticates the connections (tessera/transport/security.h).
  // Secures the coordinator's socket; JoinJob connects it.
  void ConfigureCoordinator(const std::string& secret);
  // For joining the job (JoinJob), before any other use of the sockets.
  zmq::socket_t& coordinator() { return coordinator_; }
  // `watch` (optional) watches the connection, as server `rank`.
  Status ConnectServer(const std::string& endpoint, const std::string& secret,
                       ConnectWatch* watch = nullptr, int rank = 0);
  // Once every server is connected, before the sockets are used.
  void FinishSetup();
  size_t num_sockets() const { return server_sockets_.size() + 1; }

  // Sends a message to a server or the coordinator, in order with every message sent before it.
  void Send(int target, zmq::message_t frame, bool early = false);
  // Sends what callers queued (the I/O thread, while a caller holds the receive role).
  void SendQueued();

  // Sends what is queued, then receives what the sockets hold into `received`: those `ready`
  // marks, those just sent on and those left undrained (all if `ready` is null). Each socket is
  // read until empty, which re-arms its ZMQ_FD; with `one_each`, once, and one that gave a
  // message is left undrained (its empty read saved for later). REQUIRES: the receive role.
  void Drain(std::vector<std::pair<int, zmq::message_t>>* received, const std::vector<bool>* ready,
             bool one_each);
  // A Drain mask with no socket marked (only those sent on and left undrained are read).
  const std::vector<bool>* none_ready() const { return &none_ready_; }

  // The fds a receiver polls: the sockets' ZMQ_FDs (coordinator first), then the input waker.
  std::vector<pollfd> ReceiverFds();
  // Polls `fds` and sets in `ready` (one flag per socket) which sockets to drain: those that
  // signaled, or all if the input waker fired (a sender took a socket's signal). `fds` is
  // ReceiverFds(), optionally followed by the I/O waker's fd, or just the I/O waker's (the parked
  // I/O thread, which passes no `ready`). A negative `timeout` waits without a limit.
  void Poll(std::vector<pollfd>& fds, std::chrono::microseconds timeout, std::vector<bool>* ready);

 private:
  zmq::socket_t& SocketOf(int target) {
    return target == kCoordinator ? coordinator_ : server_sockets_[target];
  }
  std::vector<bool>& ClearedSentOn();
  void WakeReceiverIfInputLocked(const std::vector<bool>& used);
  void SendQueuedLocked(std::vector<bool>* used);
  void SendLocked(Outbound out, std::vector<bool>* used);

  zmq::context_t& context_;
  Waker& io_waker_;
  ClientCounters& counters_;
  std::atomic<uint64_t>& unbudgeted_bytes_;
  std::shared_ptr<spdlog::logger> log_;
  zmq::socket_t coordinator_;
  std::vector<zmq::socket_t> server_sockets_;
  std::mutex socket_mu_;                      // held by whoever uses the sockets after setup
  tbb::concurrent_queue<Outbound> outbound_;  // messages waiting for socket_mu_
  // Sockets a caller's round read a message from and left without reading them empty (index
  // s + 1; guarded by socket_mu_): their ZMQ_FD does not signal what they still hold, so every
  // receiver reads them before it polls.
  std::vector<bool> undrained_;
  std::vector<bool> none_ready_;  // fixed after FinishSetup
  std::vector<bool> sent_on_;     // which sockets a call sent on (guarded by socket_mu_)
  Waker input_waker_;             // the receiver's: a socket has input whose signal a sender took
};

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_SOCKETS_H_
