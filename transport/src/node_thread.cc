#include "tessera/transport/node_thread.h"

namespace tessera {

void NodeThread::Start(std::function<void()> loop) {
  thread_ = std::thread([this, loop = std::move(loop)] {
    loop();
    MarkDone();
  });
}

void NodeThread::Stop() {
  stop_.store(true, std::memory_order_release);
  waker_.Notify();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  MarkDone();
}

void NodeThread::WaitUntilDone() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return done_; });
}

void NodeThread::MarkDone() {
  std::lock_guard lock(mu_);
  done_ = true;
  done_cv_.notify_all();
}

}  // namespace tessera
