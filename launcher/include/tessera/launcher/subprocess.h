// Starting child processes with their output on pipes (fork + execve).
//
// Each child is the leader of its own process group (pgid == pid), so that stopping it also stops
// whatever it started (a shell script's children, an ssh session), and so that a terminal's
// Ctrl-C reaches only the launcher, which then stops the job in order.
//
// Each child also gets SIGKILL when the thread that started it exits (Linux PR_SET_PDEATHSIG), so
// that a launcher killed with SIGKILL or crashing leaves no job behind. Hence: start children from
// a thread that outlives them (the launcher uses its main thread).
//
// Thread safety: the functions are thread-compatible; file descriptors are created close-on-exec
// so that concurrently spawned children do not inherit each other's pipes.
#ifndef TESSERA_LAUNCHER_SUBPROCESS_H_
#define TESSERA_LAUNCHER_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/launcher/job.h"

namespace tessera::launcher {

struct SpawnOptions {
  std::vector<std::string> argv;  // REQUIRES: non-empty. argv[0]: path, or name searched in PATH
  EnvList env;                    // set on top of the caller's environment
  bool stdin_pipe = false;  // true: a stream socket the caller writes (send with MSG_NOSIGNAL);
                           // false: /dev/null
};

// A started child. The caller owns the descriptors (close them with CloseFd) and must reap the
// child with waitpid.
struct ChildProcess {
  pid_t pid = -1;
  int stdin_fd = -1;   // the caller's end of the stdin socket, or -1
  int stdout_fd = -1;  // read end, non-blocking
  int stderr_fd = -1;  // read end, non-blocking
};

// Starts argv with signals reset to their defaults and an empty signal mask. Fails (NotFound,
// FailedPrecondition, Internal) when the program cannot be executed; argv[0] is resolved with
// ResolveExecutable() first.
Result<ChildProcess> SpawnChild(const SpawnOptions& options);

// Closes *fd if it is open and sets it to -1.
void CloseFd(int* fd);

// Writes all of data to fd (retrying on EINTR/EAGAIN). False on error (e.g. EPIPE).
bool WriteAll(int fd, const char* data, size_t size);

// "exited with status 3", "was killed by signal 11 (Segmentation fault)".
std::string DescribeWaitStatus(int wait_status);

// The shell-style exit code of a wait status: the exit status, or 128 + signal number.
int ExitCodeOf(int wait_status);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_SUBPROCESS_H_
