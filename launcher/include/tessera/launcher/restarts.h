// Checkpoints and restarts as the launcher sees them (docs/faults.md, "Checkpoints, resume
// and restarts"): `tessera run --checkpoint-dir DIR [--checkpoint-interval S] [--resume]
// [--max-restarts N]`. The programs write and read the checkpoints themselves (the runtime,
// through TESSERA_CHECKPOINT_DIR, TESSERA_CHECKPOINT_INTERVAL and TESSERA_RESUME); the launcher
// checks the directory before anything starts and restarts a failed job with TESSERA_RESUME=1.
//
// Thread safety: none needed; functions touch only what they are given.
#ifndef TESSERA_LAUNCHER_RESTARTS_H_
#define TESSERA_LAUNCHER_RESTARTS_H_

#include <functional>
#include <string>

#include "tessera/common/status.h"
#include "tessera/launcher/job.h"
#include "tessera/launcher/supervisor.h"

namespace tessera::launcher {

inline constexpr char kEnvCheckpointDir[] = "TESSERA_CHECKPOINT_DIR";
inline constexpr char kEnvCheckpointInterval[] = "TESSERA_CHECKPOINT_INTERVAL";
inline constexpr char kEnvResume[] = "TESSERA_RESUME";

struct CheckpointFlags {
  std::string dir;                // empty: no checkpoints
  double interval_seconds = 300;  // >= 0
  bool resume = false;
  int max_restarts = 0;  // >= 0; above 0 needs `dir`
};

// Checks the flags and the directory: created when missing, a directory, writable; without
// `resume`, holding no checkpoint (a fresh run would mix with an old one's). On success `flags`
// has an absolute dir (processes may start elsewhere). InvalidArgument naming the problem.
Status PrepareCheckpointFlags(CheckpointFlags* flags);

// The variables that pass `flags` to every process (added to JobOptions::extra_env).
EnvList CheckpointEnv(const CheckpointFlags& flags);

// Whether a job that ended with `exit_code` failed in a way a restart can cure: a process killed
// by a signal (128 + N), one that stopped answering (124) or lost the coordinator (75). A
// program's own error status (1, 2, ...) would only happen again.
bool Restartable(int exit_code);

// RunJob, and after a restartable failure (unless `cancelled()` says the launcher was told to
// stop) up to `max_restarts` more runs of the whole job with TESSERA_RESUME=1, each continuing
// from the newest complete checkpoint. Returns the last run's exit code.
Result<int> RunJobWithRestarts(const RunOptions& options, const RunIo& io, int max_restarts,
                               const std::function<bool()>& cancelled);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_RESTARTS_H_
