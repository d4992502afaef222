// NodeThread: the event-loop thread of a node (coordinator, server, client), with the means to
// stop it from another thread and to wait for the node to finish.
//
// Thread safety: every method may be called from any thread.
#ifndef TESSERA_TRANSPORT_NODE_THREAD_H_
#define TESSERA_TRANSPORT_NODE_THREAD_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "tessera/transport/waker.h"

namespace tessera {

class NodeThread {
 public:
  NodeThread() = default;
  ~NodeThread() { Stop(); }
  NodeThread(const NodeThread&) = delete;
  NodeThread& operator=(const NodeThread&) = delete;

  // Runs `loop` on a new thread; the node is done when it returns. The loop polls waker() next
  // to its sockets and returns soon after stopping() turns true. REQUIRES: called once.
  void Start(std::function<void()> loop);
  // Asks the loop to return, waits for it, and marks the node done. Idempotent.
  void Stop();
  // Blocks until the loop has returned (by itself or through Stop()).
  void WaitUntilDone();

  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  Waker& waker() { return waker_; }

 private:
  void MarkDone();

  Waker waker_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_NODE_THREAD_H_
