#include "tessera/launcher/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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
  // Resolve the program here: between fork and exec only async-signal-safe calls are allowed,
  // which rules out searching PATH there.
  Result<std::string> path = ResolveExecutable(options.argv[0]);
  if (!path.ok()) {
    return Status(path.status().code(), "cannot execute " + path.status().message());
  }

  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int in[2] = {-1, -1};
  int exec_status[2] = {-1, -1};  // the child writes errno here if exec fails
  auto close_all = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &in[0], &in[1], &exec_status[0],
                    &exec_status[1]}) {
      CloseFd(fd);
    }
  };
  Status s = MakePipe(out);
  if (s.ok()) s = MakePipe(err);
  if (s.ok()) s = MakePipe(exec_status);
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

  // Everything the child needs, built before fork.
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
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    close_all();
    return Status::Internal(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    auto fail = [&](int e) {
      [[maybe_unused]] ssize_t n = ::write(exec_status[1], &e, sizeof(e));
      ::_exit(127);
    };
    ::setpgid(0, 0);
    // If the launcher dies without stopping the job (SIGKILL, a crash), the job dies with it.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
    if (::getppid() != parent) ::_exit(127);  // it died before prctl took effect
    int stdin_fd = options.stdin_pipe ? in[0] : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0) fail(errno);
    if (::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(out[1], STDOUT_FILENO) < 0 ||
        ::dup2(err[1], STDERR_FILENO) < 0) {
      fail(errno);
    }
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some: fine
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(path->c_str(), argv.data(), envp.data());
    fail(errno);
  }

  // Parent.
  ::setpgid(pid, pid);  // also here, so that the group exists before we might signal it
  CloseFd(&out[1]);
  CloseFd(&err[1]);
  CloseFd(&in[0]);
  CloseFd(&exec_status[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_status[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  CloseFd(&exec_status[0]);
  if (n > 0) {  // exec failed; the child has exited
    ::waitpid(pid, nullptr, 0);
    close_all();
    std::string msg = "cannot execute " + options.argv[0] + ": " + std::strerror(child_errno);
    if (child_errno == ENOENT) return Status::NotFound(msg);
    if (child_errno == EACCES || child_errno == ENOEXEC) return Status::FailedPrecondition(msg);
    return Status::Internal(msg);
  }
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
