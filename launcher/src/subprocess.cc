#include "tessera/launcher/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "tessera/common/check.h"
#include "tessera/launcher/rank_env.h"

namespace tessera::launcher {
namespace {

// A pipe whose both ends are close-on-exec; the child gets its end through dup2 (which clears
// the flag on the new descriptor).
Status MakePipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Status::Internal(std::string("pipe: ") + std::strerror(errno));
  }
  return Status::Ok();
}

class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawnattr_init(&attr_);
    posix_spawn_file_actions_init(&actions_);
  }
  ~SpawnAttributes() {
    posix_spawnattr_destroy(&attr_);
    posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;

  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t actions_;
};

}  // namespace

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        // A non-blocking destination (e.g. a terminal shared with a child): wait until writable.
        fd_set set;
        FD_ZERO(&set);
        FD_SET(fd, &set);
        ::select(fd + 1, nullptr, &set, nullptr, nullptr);
        continue;
      }
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

Result<ChildProcess> SpawnChild(const SpawnOptions& options) {
  TESSERA_CHECK(!options.argv.empty());
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int in[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &in[0], &in[1]}) CloseFd(fd);
  };
  Status s = MakePipe(out);
  if (s.ok()) s = MakePipe(err);
  // stdin is a socket pair rather than a pipe so that the launcher can write to it with
  // MSG_NOSIGNAL: a child that already exited must not kill the launcher with SIGPIPE.
  if (s.ok() && options.stdin_pipe &&
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    s = Status::Internal(std::string("socketpair: ") + std::strerror(errno));
  }
  if (!s.ok()) {
    close_all();
    return s;
  }

  SpawnAttributes sa;
  if (options.stdin_pipe) {
    posix_spawn_file_actions_adddup2(&sa.actions_, in[0], STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&sa.actions_, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&sa.actions_, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&sa.actions_, err[1], STDERR_FILENO);

  sigset_t all_signals;
  sigfillset(&all_signals);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigdefault(&sa.attr_, &all_signals);
  posix_spawnattr_setsigmask(&sa.attr_, &no_signals);
  posix_spawnattr_setpgroup(&sa.attr_, 0);
  posix_spawnattr_setflags(&sa.attr_, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                          POSIX_SPAWN_SETPGROUP);

  // Environment: ours, with options.env overriding.
  std::map<std::string, std::string> env_map = CurrentEnvironment();
  for (const auto& [name, value] : options.env) env_map[name] = value;
  std::vector<std::string> env_strings;
  env_strings.reserve(env_map.size());
  for (const auto& [name, value] : env_map) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pid_t pid = -1;
  // posix_spawnp searches PATH for names without '/'. glibc reports exec failures as the
  // return value (it spawns with CLONE_VFORK and waits for the exec).
  int rc = ::posix_spawnp(&pid, argv[0], &sa.actions_, &sa.attr_, argv.data(), envp.data());
  if (rc != 0) {
    close_all();
    std::string msg = "cannot execute " + options.argv[0] + ": " + std::strerror(rc);
    if (rc == ENOENT) return Status::NotFound(msg);
    if (rc == EACCES || rc == ENOEXEC) return Status::FailedPrecondition(msg);
    return Status::Internal(msg);
  }
  CloseFd(&out[1]);
  CloseFd(&err[1]);
  CloseFd(&in[0]);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  ChildProcess child;
  child.pid = pid;
  child.stdout_fd = out[0];
  child.stderr_fd = err[0];
  child.stdin_fd = in[1];
  return child;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "stopped with wait status " + std::to_string(wait_status);
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace tessera::launcher
