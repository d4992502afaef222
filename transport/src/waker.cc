#include "tessera/transport/waker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "tessera/common/check.h"

namespace tessera {

Waker::Waker() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  TESSERA_CHECK_MSG(fd_ >= 0, "eventfd failed");
}

Waker::~Waker() { close(fd_); }

void Waker::Notify() {
  uint64_t one = 1;
  // The counter saturates only after 2^64-2 notifications without a Drain; EAGAIN is harmless.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
}

void Waker::Drain() {
  uint64_t value;
  [[maybe_unused]] ssize_t n = read(fd_, &value, sizeof(value));
}

int PollItems(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout) {
  try {
    return zmq::poll(items, count, timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    for (size_t i = 0; i < count; ++i) items[i].revents = 0;
    return 0;
  }
}

}  // namespace tessera
