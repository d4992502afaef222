// The receive role: which thread receives the client's messages, and the I/O thread.
//
// Contract: one thread at a time holds the role (receive_mu_): it polls the sockets, receives
// what they hold and hands each message to the IoHandler. The I/O thread holds it while no caller
// waits. A caller that must wait for a reply (AwaitReady) takes the role itself, so the reply it
// waits for reaches it without a hand-over through the I/O thread; it lets the role go without
// waking the I/O thread, which takes it back once callers have not received for kParkInterval, so
// a push nobody waits for is applied within about that long (docs/parameter-server.md "Nodes").
// The I/O thread also sends what callers queued and spends managed communication's spare budget.
// Handlers run without socket_mu_ and take stripe, call and channel locks: the role is taken
// before any of those, never while holding one.
#ifndef TESSERA_CLIENT_SRC_RECEIVE_ROLE_H_
#define TESSERA_CLIENT_SRC_RECEIVE_ROLE_H_

#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "comm_scheduler.h"
#include "sockets.h"
#include "tessera/transport/waker.h"

namespace tessera::client_internal {

// The I/O thread, parked while callers receive, takes the receive role back once this long has
// passed since a caller last received: the bound on how late a push nobody waits for is applied,
// and about how often the parked thread wakes. Longer saves wake-ups but slowed data-parallel
// LDA's convergence (bench/README.md, ps_bench tuning notes).
constexpr std::chrono::microseconds kParkInterval{1000};
// A caller holding the receive role sleeps in poll at most this long per round.
constexpr std::chrono::milliseconds kMaxReceiveRound{5};

// What the receiving thread calls.
class IoHandler {
 public:
  // A message from server `source` (or kCoordinator). REQUIRES: no stripe, call or channel lock.
  virtual void Handle(int source, zmq::message_t frame) = 0;
  // Spare budget is there and rows are pending (the I/O thread only).
  virtual void SendEarly() = 0;

 protected:
  ~IoHandler() = default;
};

class ReceiveRole {
 public:
  // `io_waker` is the I/O thread's (ClientSockets notifies it for queued sends).
  ReceiveRole(ClientSockets& sockets, Waker& io_waker, IoHandler& handler)
      : sockets_(sockets), io_waker_(io_waker), handler_(handler) {}

  // Once the sockets are connected, before any receiving.
  void FinishSetup() { receiver_fds_ = sockets_.ReceiverFds(); }

  // Waits until ready() (called with `lock` held) or `deadline`, receiving itself when it can
  // take the receive role, else sleeping on `cv` (which the receiver's handlers notify).
  // Returns ready(). REQUIRES: `lock` holds the mutex that ready()'s state and `cv` go with;
  // that mutex is released while receiving.
  template <typename Ready>
  bool AwaitReady(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready,
                  std::chrono::steady_clock::time_point deadline) {
    if (ready()) return true;
    while (!ready() && std::chrono::steady_clock::now() < deadline) {
      std::unique_lock role(receive_mu_, std::try_to_lock);
      if (!role.owns_lock() && io_has_role_.load(std::memory_order_acquire)) {
        // The I/O thread is in poll: ask it to hand the role over, and take it.
        role_wanted_.fetch_add(1, std::memory_order_acq_rel);
        io_waker_.Notify();
        lock.unlock();
        role.lock();
        role_wanted_.fetch_sub(1, std::memory_order_acq_rel);
        lock.lock();
        if (ready()) break;  // handled while we waited for the role
      }
      if (role.owns_lock()) {
        lock.unlock();
        ReceiveRound(deadline);
        role.unlock();
        lock.lock();
        continue;
      }
      // Another caller receives: its handlers wake us.
      cv.wait_until(lock, deadline);
    }
    // The role is let go without waking the I/O thread: a caller that reads batch after batch
    // takes it again at once, and receives its next reply itself. The parked I/O thread takes it
    // back once callers stop receiving (pushes nobody waits for must still be applied soon: a
    // read between clocks takes whatever has arrived; docs/parameter-server.md "Nodes").
    return ready();
  }

  // If no other thread is receiving, takes in what has arrived, without waiting.
  void ReceiveWaitingIfIdle() {
    if (std::unique_lock role(receive_mu_, std::try_to_lock); role.owns_lock()) {
      ReceiveRound(std::chrono::microseconds(0));
    }
  }

  // The I/O thread's loop: receives while no caller does, sends what callers queued while another
  // thread was using the sockets, and spends `comm`'s spare budget through IoHandler::SendEarly.
  // Returns once `stop` is set, after sending what is queued.
  void RunIoThread(CommScheduler& comm, const std::atomic<bool>& stop);

 private:
  bool DrainAndHandle(std::vector<std::pair<int, zmq::message_t>>* received,
                      const std::vector<bool>* ready = nullptr, bool one_each = false);
  void ReceiveRound(std::chrono::steady_clock::time_point deadline);
  void ReceiveRound(std::chrono::microseconds wait);

  ClientSockets& sockets_;
  Waker& io_waker_;
  IoHandler& handler_;
  std::mutex receive_mu_;                 // the role
  std::atomic<bool> io_has_role_{false};  // the I/O thread holds receive_mu_
  std::atomic<int> role_wanted_{0};       // callers asking the I/O thread for the role
  // When a caller last ended a receive round (steady clock ticks; see kParkInterval).
  std::atomic<std::chrono::steady_clock::rep> last_caller_round_{0};
  std::vector<pollfd> receiver_fds_;  // ReceiverFds(), for callers holding the role
  // Scratch of a caller's round, kept across rounds so that receiving allocates nothing
  // (guarded by the role).
  std::vector<bool> round_ready_;
  std::vector<std::pair<int, zmq::message_t>> round_received_;
};

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_RECEIVE_ROLE_H_
