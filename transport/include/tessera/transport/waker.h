// Waker: lets any thread wake a node's event loop that is blocked in zmq::poll.
//
// ZeroMQ sockets must not be shared between threads, so other threads hand work to the loop
// through a queue and then Notify(). Backed by an eventfd that zmq::poll watches next to its
// sockets. Thread-safe.
#ifndef TESSERA_TRANSPORT_WAKER_H_
#define TESSERA_TRANSPORT_WAKER_H_

#include <chrono>
#include <cstddef>
#include <zmq.hpp>

namespace tessera {

class Waker {
 public:
  Waker();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // Makes the next (or current) poll on poll_item() return. Cheap; may be called from any thread.
  void Notify();
  // Clears pending notifications; called by the loop after poll reports the item readable.
  void Drain();
  zmq::pollitem_t poll_item() const { return {nullptr, fd_, ZMQ_POLLIN, 0}; }

 private:
  int fd_;
};

// zmq::poll that treats a signal's interruption (EINTR) as "nothing ready yet" instead of
// throwing: a profiler, a debugger or SIGCHLD must not take a node's event loop down. Other
// errors still throw zmq::error_t.
int PollItems(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_WAKER_H_
