#include "tessera/launcher/relay.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "tessera/launcher/subprocess.h"

namespace tessera::launcher {
namespace {

// A line longer than this is emitted in pieces rather than buffered without bound.
constexpr size_t kMaxLine = 64 * 1024;

struct Stream {
  int fd = -1;
  int dest_fd = -1;
  std::string partial;
};

void Emit(const std::string& prefix, const Stream& stream, std::string_view line) {
  std::string text = prefix;
  text += line;
  text += '\n';
  WriteAll(stream.dest_fd, text.data(), text.size());  // a closed output is not the job's failure
}

// Reads what `stream` has (it is non-blocking), emitting complete lines; closes it at its end.
void Drain(const std::string& prefix, Stream& stream) {
  char buf[16384];
  // Bounded, so that a process that writes without pause cannot delay a forwarded signal.
  for (int reads = 0; reads < 16 && stream.fd >= 0; ++reads) {
    ssize_t n = ::read(stream.fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      if (!stream.partial.empty()) Emit(prefix, stream, stream.partial);
      stream.partial.clear();
      CloseFd(&stream.fd);
      return;
    }
    stream.partial.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = stream.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      Emit(prefix, stream, std::string_view(stream.partial).substr(start, nl - start));
    }
    stream.partial.erase(0, start);
    if (stream.partial.size() >= kMaxLine) {
      Emit(prefix, stream, stream.partial);
      stream.partial.clear();
    }
  }
}

}  // namespace

Result<int> RunRelayed(const ProcessSpec& spec, const RelayIo& io) {
  SpawnOptions spawn;
  spawn.argv = spec.argv;
  spawn.env = spec.env;
  Result<ChildProcess> child = SpawnChild(spawn);
  if (!child.ok()) return child.status();
  const std::string prefix = "[" + spec.Label() + "] ";
  Stream out{child->stdout_fd, io.out_fd, ""};
  Stream err{child->stderr_fd, io.err_fd, ""};
  int wait_status = 0;
  bool running = true;
  // Until the child has exited and its pipes are at their end (a grandchild holding them open
  // does not keep the task alive once the child is gone: the pipes are drained once more).
  while (running) {
    pollfd fds[3] = {{out.fd, POLLIN, 0}, {err.fd, POLLIN, 0}, {io.cancel_fd, POLLIN, 0}};
    // 50 ms bounds how late an exit is noticed while the pipes stay open.
    const int ready = ::poll(fds, 3, 50);
    if (ready > 0) {
      if (fds[2].revents != 0) {
        unsigned char sig = 0;
        if (::read(io.cancel_fd, &sig, 1) == 1 && sig != 0) {
          if (::kill(-child->pid, sig) != 0) ::kill(child->pid, sig);
        }
      }
      if (fds[0].revents != 0) Drain(prefix, out);
      if (fds[1].revents != 0) Drain(prefix, err);
    }
    const pid_t r = ::waitpid(child->pid, &wait_status, WNOHANG);
    if (r == child->pid || (r < 0 && errno == ECHILD)) running = false;
  }
  for (int i = 0; i < 64 && (out.fd >= 0 || err.fd >= 0); ++i) {
    Drain(prefix, out);
    Drain(prefix, err);
  }
  for (Stream* s : {&out, &err}) {
    if (!s->partial.empty()) Emit(prefix, *s, s->partial);
    CloseFd(&s->fd);
  }
  return ExitCodeOf(wait_status);
}

}  // namespace tessera::launcher
