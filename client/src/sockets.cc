#include "sockets.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "tessera/transport/endpoint.h"
#include "tessera/transport/parts.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/security.h"
#include "tessera/transport/socket_limits.h"

namespace tessera::client_internal {

ClientSockets::ClientSockets(zmq::context_t& context, Waker& io_waker, ClientCounters& counters,
                             std::atomic<uint64_t>& unbudgeted_bytes,
                             std::shared_ptr<spdlog::logger> log)
    : context_(context),
      io_waker_(io_waker),
      counters_(counters),
      unbudgeted_bytes_(unbudgeted_bytes),
      log_(std::move(log)),
      coordinator_(context, zmq::socket_type::dealer) {}

void ClientSockets::ConfigureCoordinator(const std::string& secret) {
  ConfigureControlSocket(coordinator_);
  SecureConnectSide(coordinator_, secret);
  coordinator_.set(zmq::sockopt::linger, 2000);  // let the final Leave go out
}

Status ClientSockets::ConnectServer(const std::string& endpoint, const std::string& secret,
                                    ConnectWatch* watch, int rank) {
  zmq::socket_t socket(context_, zmq::socket_type::dealer);
  ConfigureSocket(socket);
  SecureConnectSide(socket, secret);
  socket.set(zmq::sockopt::linger, 2000);
  if (watch != nullptr) watch->Watch(socket, fmt::format("server {}", rank), endpoint);
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(fmt::format("cannot connect to server {}: {}", endpoint, e.what()));
  }
  server_sockets_.push_back(std::move(socket));
  return Status::Ok();
}

void ClientSockets::FinishSetup() {
  undrained_.assign(num_sockets(), false);
  none_ready_.assign(num_sockets(), false);
}

// The calling thread sends itself when no other thread is using the sockets (the common case:
// no hand-over to the I/O thread, no wake-up, no context switch); otherwise it queues the
// message for the I/O thread. Whoever holds socket_mu_ first sends what is queued, so a message
// never overtakes one queued before it.
void ClientSockets::Send(int target, zmq::message_t frame, bool early) {
  std::unique_lock lock(socket_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    outbound_.push(Outbound{target, std::move(frame), early});
    io_waker_.Notify();
    return;
  }
  std::vector<bool>& used = ClearedSentOn();
  SendQueuedLocked(&used);
  SendLocked(Outbound{target, std::move(frame), early}, &used);
  WakeReceiverIfInputLocked(used);
}

void ClientSockets::SendQueued() {
  std::lock_guard lock(socket_mu_);
  std::vector<bool>& used = ClearedSentOn();
  SendQueuedLocked(&used);
  WakeReceiverIfInputLocked(used);
}

// sent_on_, a false per socket (sized here: a call may come before setup has made the sockets;
// once sized, assign reuses the storage). REQUIRES: socket_mu_.
std::vector<bool>& ClientSockets::ClearedSentOn() {
  sent_on_.assign(num_sockets(), false);
  return sent_on_;
}

// Sending may have run a socket's pending commands, and with them used up the edge of its
// ZMQ_FD that would wake the receiver for a message that arrived meanwhile: if a socket in
// `used` has input waiting, wake the receiver (it drains every socket when input_waker_ fires).
// REQUIRES: socket_mu_.
void ClientSockets::WakeReceiverIfInputLocked(const std::vector<bool>& used) {
  for (int s = kCoordinator; s < static_cast<int>(server_sockets_.size()); ++s) {
    // An undrained socket is read before the receiver polls: its signal is not needed.
    if (used[s + 1] && !undrained_[s + 1] &&
        (SocketOf(s).get(zmq::sockopt::events) & ZMQ_POLLIN) != 0) {
      input_waker_.Notify();
      return;
    }
  }
}

// REQUIRES: socket_mu_.
void ClientSockets::SendQueuedLocked(std::vector<bool>* used) {
  Outbound out;
  while (outbound_.try_pop(out)) SendLocked(std::move(out), used);
}

// REQUIRES: socket_mu_.
void ClientSockets::SendLocked(Outbound out, std::vector<bool>* used) {
  const size_t bytes = out.frame.size();
  (*used)[out.target + 1] = true;
  try {
    // Frames of at most kDataPartBytes: what a server's socket takes (parts.h).
    SendInParts(SocketOf(out.target), std::move(out.frame));
  } catch (const zmq::error_t& e) {
    log_->error("send failed: {}", e.what());
    return;
  }
  counters_.Count(kBytesSent, bytes);
  counters_.Count(kMessagesSent);
  if (out.target != kCoordinator) counters_.Count(out.early ? kEarlyBytes : kBoundaryBytes, bytes);
  // Everything sent counts against the budget (the I/O thread's); only early sends wait for it.
  unbudgeted_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void ClientSockets::Drain(std::vector<std::pair<int, zmq::message_t>>* received,
                          const std::vector<bool>* ready, bool one_each) {
  std::lock_guard lock(socket_mu_);
  std::vector<bool>& used = ClearedSentOn();
  SendQueuedLocked(&used);
  for (int s = kCoordinator; s < static_cast<int>(server_sockets_.size()); ++s) {
    // A socket just sent on may have taken its own signal: drain it too.
    if (ready != nullptr && !(*ready)[s + 1] && !used[s + 1] && !undrained_[s + 1]) continue;
    zmq::message_t frame;
    bool got = false;
    while (ReceiveRetrying(SocketOf(s), frame, zmq::recv_flags::dontwait)) {
      received->emplace_back(s, std::move(frame));
      got = true;
      if (one_each) break;
    }
    undrained_[s + 1] = one_each && got;
  }
}

std::vector<pollfd> ClientSockets::ReceiverFds() {
  std::vector<pollfd> fds;
  fds.push_back({coordinator_.get(zmq::sockopt::fd), POLLIN, 0});
  for (auto& s : server_sockets_) fds.push_back({s.get(zmq::sockopt::fd), POLLIN, 0});
  fds.push_back({input_waker_.poll_item().fd, POLLIN, 0});
  return fds;
}

void ClientSockets::Poll(std::vector<pollfd>& fds, std::chrono::microseconds timeout,
                         std::vector<bool>* ready) {
  const size_t sockets = num_sockets();
  if (ready != nullptr) ready->assign(sockets, false);
  timespec ts{};
  if (timeout.count() >= 0) {
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
  }
  if (ppoll(fds.data(), fds.size(), timeout.count() >= 0 ? &ts : nullptr, nullptr) < 0 &&
      errno != EINTR) {
    log_->error("poll failed: {}", std::strerror(errno));
    if (ready != nullptr) ready->assign(sockets, true);
    return;
  }
  for (const pollfd& p : fds) {
    if ((p.revents & POLLIN) == 0) continue;
    if (p.fd == io_waker_.poll_item().fd) {
      io_waker_.Drain();
    } else if (p.fd == input_waker_.poll_item().fd) {
      input_waker_.Drain();
      if (ready != nullptr) ready->assign(sockets, true);
      return;
    }
  }
  if (ready != nullptr && fds.size() > sockets) {
    for (size_t i = 0; i < sockets; ++i) (*ready)[i] = (fds[i].revents & POLLIN) != 0;
  }
}

}  // namespace tessera::client_internal
