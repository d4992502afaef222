#include "receive_role.h"

#include <algorithm>

namespace tessera::client_internal {

// Receives what the sockets hold (those `ready` marks, those just sent on, and those left
// undrained; all if `ready` is null) and handles it; returns whether there was anything.
// Sends what callers queued first. Each socket is read until it has nothing, which re-arms its
// ZMQ_FD; a socket whose ZMQ_FD did not signal holds nothing (or a sender saw its signal and
// woke the waker, which marks all), and skipping it saves the system calls of an empty read.
// With `one_each`, a socket is read once: one that gave a message is left undrained (see
// undrained_), and the empty read that re-arms it is saved for later, usually for never (see
// ReceiveRound). REQUIRES: the role, and no stripe lock, calls_mu_ or ServerChannel lock
// (handlers take them).
bool ReceiveRole::DrainAndHandle(std::vector<std::pair<int, zmq::message_t>>* received,
                                 const std::vector<bool>* ready, bool one_each) {
  sockets_.Drain(received, ready, one_each);
  // Handled without socket_mu_: handlers take stripe locks, and callers holding a stripe lock
  // may send.
  const bool any = !received->empty();
  for (auto& [source, frame] : *received) handler_.Handle(source, std::move(frame));
  received->clear();
  return any;
}

// One round of a caller's receiving: handles what is waiting, or else sleeps in poll until
// something arrives (at most until `deadline`, and at most kMaxReceiveRound, so the role
// changes hands now and then) and handles that. REQUIRES: as DrainAndHandle.
void ReceiveRole::ReceiveRound(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - std::chrono::steady_clock::now());
  ReceiveRound(std::clamp(left + std::chrono::microseconds(1), std::chrono::microseconds(0),
                          std::chrono::microseconds(kMaxReceiveRound)));
}
// The same, waiting at most `wait` (0: takes only what has arrived). Stamped in
// last_caller_round_ (see kParkInterval).
// A caller reads one message per socket per round: when replies queue up (requests sent
// ahead), each round takes the next one without a poll and without the empty read that
// draining costs (ZeroMQ's getpid and mailbox poll), as a blocking zmq_recv would. Only once
// a socket is found empty does the receiver poll. What a caller leaves unread is read by the
// next round, or by the I/O thread once callers stop receiving (within about 1 ms, as for a
// push that comes after a caller let the role go).
void ReceiveRole::ReceiveRound(std::chrono::microseconds wait) {
  if (!DrainAndHandle(&round_received_, sockets_.none_ready(), /*one_each=*/true)) {
    // Returns at once if a socket has signaled (or input_waker_ has fired) already.
    sockets_.Poll(receiver_fds_, wait, &round_ready_);
    DrainAndHandle(&round_received_, &round_ready_, /*one_each=*/true);
  }
  last_caller_round_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                           std::memory_order_relaxed);
}

void ReceiveRole::RunIoThread(CommScheduler& comm, const std::atomic<bool>& stop) {
  std::vector<pollfd> fds = sockets_.ReceiverFds();
  fds.push_back({io_waker_.poll_item().fd, POLLIN, 0});
  // The I/O waker only: the input waker is the receiver's.
  std::vector<pollfd> parked_fds = {fds.back()};
  std::vector<bool> ready(sockets_.num_sockets(), true);
  comm.StartBudget();
  std::vector<std::pair<int, zmq::message_t>> received;
  std::unique_lock role(receive_mu_);
  io_has_role_.store(true, std::memory_order_release);
  while (true) {
    const bool stopping = stop.load(std::memory_order_acquire);
    if (role.owns_lock()) {
      DrainAndHandle(&received, &ready);
    } else {
      sockets_.SendQueued();
    }
    if (stopping) break;
    if (role.owns_lock() && role_wanted_.load(std::memory_order_acquire) > 0) {
      io_has_role_.store(false, std::memory_order_release);
      role.unlock();
    }
    // The role comes back once callers have stopped receiving: while one reads batch after
    // batch (and handles every message that arrives, pushes too), taking it would only make
    // that caller ask for it again.
    const auto since_caller_round =
        std::chrono::steady_clock::now() -
        std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(
            last_caller_round_.load(std::memory_order_relaxed)));
    const bool callers_idle = since_caller_round >= kParkInterval;
    if (!role.owns_lock() && role_wanted_.load(std::memory_order_acquire) == 0 && callers_idle &&
        role.try_lock()) {
      io_has_role_.store(true, std::memory_order_release);
      ready.assign(ready.size(), true);
      continue;  // drain before polling: messages may have waited
    }
    std::chrono::microseconds timeout = comm.EarlySendWait();
    if (!role.owns_lock()) {
      // Until the interval after the latest caller round is over; a whole interval if it is
      // over already (a caller holds the role, or one asked for it).
      auto park =
          callers_idle
              ? kParkInterval
              : std::chrono::ceil<std::chrono::microseconds>(kParkInterval - since_caller_round);
      timeout = timeout.count() < 0 ? park : std::min(timeout, park);
    }
    if (role.owns_lock()) {
      sockets_.Poll(fds, timeout, &ready);
    } else {
      sockets_.Poll(parked_fds, timeout, nullptr);  // only the I/O waker: nothing to drain
    }
    if (comm.EarlySendDue()) handler_.SendEarly();
  }
  if (role.owns_lock()) io_has_role_.store(false, std::memory_order_release);
}

}  // namespace tessera::client_internal
