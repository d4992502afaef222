// One process of a `--from-env` job run under the launcher rather than in its place: the task
// (started by srun or mpirun) starts the process as its child, relays each line it prints with
// the process's label in front ("[worker 0] ", as `tessera run` does), forwards the signals it
// gets, and exits with the process's status. `--no-prefix` execs the process instead (ExecSpec).
//
// Thread safety: RunRelayed reaps only its own child; call it from the thread that outlives the
// child (PR_SET_PDEATHSIG, see subprocess.h).
#ifndef TESSERA_LAUNCHER_RELAY_H_
#define TESSERA_LAUNCHER_RELAY_H_

#include "tessera/common/status.h"
#include "tessera/launcher/job.h"

namespace tessera::launcher {

struct RelayIo {
  int out_fd = 1;  // the process's stdout lines go here, prefixed
  int err_fd = 2;  // its stderr lines go here, prefixed
  // Readable when the task got a signal: one byte, the signal number, which is sent on to the
  // process's group. -1: none.
  int cancel_fd = -1;
};

// Runs `spec` (a local spec: argv and env) to its end and returns its exit code (the status, or
// 128 + N when killed by signal N). Errors: those of SpawnChild when it cannot be started.
Result<int> RunRelayed(const ProcessSpec& spec, const RelayIo& io);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_RELAY_H_
