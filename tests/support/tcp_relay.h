// A TCP relay for fault-injection tests: listens on loopback, forwards every connection it accepts
// to a target port both ways, and on demand stalls the stream from its clients (as a starved or
// stopped sender would: the bytes stop mid-message while the connection stays up), resumes it, or
// cuts every connection with a reset (as a dying peer or a failing network would).
//
// Thread safety: the control methods may be called from any thread; the relay runs its own.
#ifndef TESSERA_TESTS_SUPPORT_TCP_RELAY_H_
#define TESSERA_TESTS_SUPPORT_TCP_RELAY_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {

class TcpRelay {
 public:
  // Forwards to 127.0.0.1:`target_port`.
  explicit TcpRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        ::pipe2(wake_, O_CLOEXEC) != 0) {
      throw std::runtime_error("relay: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpRelay() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    Wake();
    thread_.join();
    for (Pair& p : pairs_) Close(p, false);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

  // Bytes forwarded from clients to the target so far.
  uint64_t forwarded() {
    std::lock_guard lock(mu_);
    return forwarded_;
  }
  // Stops forwarding from clients once `bytes` have been forwarded in all (the target's answers
  // still flow).
  void StallAt(uint64_t bytes) {
    {
      std::lock_guard lock(mu_);
      stall_at_ = bytes;
    }
    Wake();
  }
  // Blocks until the stall set by StallAt has been reached.
  void AwaitStalled() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return forwarded_ >= stall_at_; });
  }
  void Resume() { StallAt(UINT64_MAX); }
  // Resets every connection (both sides) and resumes; new connections are relayed again.
  void Cut() {
    {
      std::lock_guard lock(mu_);
      cut_ = true;
      stall_at_ = UINT64_MAX;
    }
    Wake();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !cut_; });
  }

 private:
  struct Pair {
    int client = -1;
    int target = -1;
  };

  void Wake() {
    const char c = 1;
    (void)!::write(wake_[1], &c, 1);
  }

  static void Close(Pair& p, bool reset) {
    for (int* fd : {&p.client, &p.target}) {
      if (*fd < 0) continue;
      if (reset) {
        linger l{1, 0};  // close with RST, as a crash or a broken network would end it
        ::setsockopt(*fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      }
      ::close(*fd);
      *fd = -1;
    }
  }

  // Copies what `from` has to `to` (at most `limit` bytes); false when either side is gone.
  static bool Copy(int from, int to, uint64_t limit, uint64_t* copied) {
    char buf[65536];
    const ssize_t n = ::read(from, buf, std::min<uint64_t>(sizeof(buf), limit));
    if (n <= 0) return false;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = ::send(to, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (w <= 0) return false;
      sent += w;
    }
    *copied = static_cast<uint64_t>(n);
    return true;
  }

  void Accept() {
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    const int target = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (::connect(target, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(client);
      ::close(target);
      return;
    }
    pairs_.push_back({client, target});
  }

  void Loop() {
    while (true) {
      uint64_t room = 0;
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
        if (cut_) {
          for (Pair& p : pairs_) Close(p, true);
          pairs_.clear();
          cut_ = false;
          cv_.notify_all();
        }
        room = stall_at_ > forwarded_ ? stall_at_ - forwarded_ : 0;
      }
      std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (const Pair& p : pairs_) {
        fds.push_back({p.client, static_cast<short>(room > 0 ? POLLIN : 0), 0});
        fds.push_back({p.target, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), -1) <= 0) continue;
      if (fds[0].revents != 0) {
        char drain[64];
        (void)!::read(wake_[0], drain, sizeof(drain));
      }
      if (fds[1].revents != 0) Accept();
      for (size_t i = 0; i < pairs_.size() && 2 + 2 * i + 1 < fds.size(); ++i) {
        Pair& p = pairs_[i];
        uint64_t copied = 0;
        bool ok = true;
        if (fds[2 + 2 * i].revents != 0 && room > 0) {
          ok = Copy(p.client, p.target, room, &copied);
          std::lock_guard lock(mu_);
          forwarded_ += copied;
          room -= std::min(room, copied);
          cv_.notify_all();
        }
        uint64_t back = 0;
        if (ok && fds[2 + 2 * i + 1].revents != 0) ok = Copy(p.target, p.client, UINT64_MAX, &back);
        if (!ok) Close(p, false);
      }
      std::erase_if(pairs_, [](const Pair& p) { return p.client < 0; });
    }
  }

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::vector<Pair> pairs_;  // the relay thread's
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t forwarded_ = 0;
  uint64_t stall_at_ = UINT64_MAX;
  bool cut_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_SUPPORT_TCP_RELAY_H_
