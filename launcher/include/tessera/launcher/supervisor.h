// Running a whole job: `tessera run` without --from-env.
//
// RunJob starts the coordinator, waits for it to write its endpoint, starts the servers and the
// workers, and streams every line they print, prefixed with the process's label, until:
//   - all workers exited with status 0: the servers and the coordinator are stopped (SIGTERM,
//     which they must treat as a normal shutdown) and the job's exit code is 0;
//   - a process exited with a nonzero status or was killed by a signal: a message names it
//     ("worker 1 (pid N) exited with status 3; stopping the job"), the others are stopped, and
//     the job's exit code is that process's (status, or 128 + signal);
//   - cancel_fd became readable (the driver's SIGINT/SIGTERM handler writes the signal number to
//     it): everything is stopped and the exit code is 128 + that signal.
// Stopping sends SIGTERM to each remaining process group, then SIGKILL after the grace period.
// When all workers succeed the exit code is the maximum of the workers' codes (i.e. 0).
//
// Thread safety: RunJob reaps only the children it started (waitpid on their pids), so it can
// run inside a larger process such as a test; it must not run concurrently with itself on the
// same cancel_fd.
#ifndef TESSERA_LAUNCHER_SUPERVISOR_H_
#define TESSERA_LAUNCHER_SUPERVISOR_H_

#include <chrono>
#include <string>

#include "tessera/common/status.h"
#include "tessera/launcher/job.h"

namespace tessera::launcher {

struct RunOptions {
  JobOptions job;
  // How long the coordinator has to write its endpoint file. Default: 30 s.
  std::chrono::milliseconds startup_timeout{30000};
  // Between SIGTERM and SIGKILL when stopping processes. Default: 3 s.
  std::chrono::milliseconds grace_period{3000};
  // Directory for the endpoint file. Default (empty): a fresh directory under $TMPDIR or /tmp,
  // removed at the end.
  std::string scratch_dir;
};

struct RunIo {
  int out_fd = 1;      // children's stdout lines go here, prefixed
  int err_fd = 2;      // children's stderr lines go here, prefixed
  int cancel_fd = -1;  // see above; -1: none
};

// Runs the job to completion; returns its exit code (see above). A non-OK Status means the job
// could not be started (a program that cannot be executed, a coordinator that died or never wrote
// its endpoint); everything started by then has been stopped. REQUIRES:
// ValidateJobOptions(options.job).ok().
Result<int> RunJob(const RunOptions& options, const RunIo& io);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_SUPERVISOR_H_
