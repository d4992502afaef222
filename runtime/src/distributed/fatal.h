// How the distributed executor's parts stop a worker: when the workers can no longer agree on the
// program's state (a peer gone, a malformed or unexpected message), going on would compute
// something silently wrong, so the worker aborts with a message naming the problem.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <source_location>
#include <string>

#include "tessera/common/check.h"
#include "tessera/common/status.h"
#include "tessera/transport/liveness.h"

namespace tessera::internal {

[[noreturn]] inline void Fatal(const std::string& what,
                               std::source_location loc = std::source_location::current()) {
  CheckFailed(loc.file_name(), static_cast<int>(loc.line()), "distributed executor:",
              what.c_str());
}

// A worker that stops because another worker left the program before it exits kExitPeerLeft
// (76, tessera/transport/liveness.h): not a crash, so `tessera run --max-restarts` does not
// restart the job, which would fail the same way.

// Whether `s` says that another worker left the program while this one waits for it: Aborted,
// from the peer mesh (peer_mesh.cc) or from a parameter server refusing a read that waits for a
// worker at its final barrier (server/src/server_reads.cc; proto ErrorCode peerLeft).
inline bool PeerLeft(const Status& s) { return s.code() == StatusCode::kAborted; }

// Whether `s` says that a peer is lost: a connection of the peer mesh dropped, or a peer did not
// answer in time. The job failed, most likely elsewhere: not a bug of this worker.
inline bool PeerLost(const Status& s) { return s.code() == StatusCode::kUnavailable; }

// Stops this worker with kExitPeerLeft, saying why (no abort: the cause is the other worker's).
[[noreturn]] inline void ExitPeerLeft(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr,
               "distributed executor: %s\nstopping this worker (exit %d): another worker left the "
               "program early; its own output says why\n",
               what.c_str(), kExitPeerLeft);
  std::fflush(stderr);
  std::_Exit(kExitPeerLeft);
}

// Stops this worker with kExitJobFailed (75), saying why: `tessera run` reports the process that
// failed first, and --max-restarts restarts the job (a lost connection is not the program's).
[[noreturn]] inline void ExitPeerLost(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "distributed executor: %s\nstopping this worker (exit %d): the job failed\n",
               what.c_str(), kExitJobFailed);
  std::fflush(stderr);
  std::_Exit(kExitJobFailed);
}

// Fatal unless `s` is OK; `doing` says what failed ("sending a step's changes"). When another
// worker left the program, ExitPeerLeft instead; when a peer is lost, ExitPeerLost.
inline void CheckOk(const Status& s, const char* doing,
                    std::source_location loc = std::source_location::current()) {
  if (s.ok()) return;
  if (PeerLeft(s)) ExitPeerLeft(fmt::format("{}: {}", doing, s.ToString()));
  if (PeerLost(s)) ExitPeerLost(fmt::format("{}: {}", doing, s.ToString()));
  Fatal(fmt::format("{}: {}", doing, s.ToString()), loc);
}

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_
