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

namespace tessera::internal {

[[noreturn]] inline void Fatal(const std::string& what,
                               std::source_location loc = std::source_location::current()) {
  CheckFailed(loc.file_name(), static_cast<int>(loc.line()), "distributed executor:",
              what.c_str());
}

// Exit code of a worker that stops because another worker left the program before it (returned
// from main, most often with an error of its own): not a crash, so `tessera run --max-restarts`
// does not restart the job, which would fail the same way.
inline constexpr int kExitPeerLeft = 76;

// Whether `s` says that another worker left the program while this one waits for it: the peer
// mesh's Aborted (peer_mesh.cc), or a parameter server refusing a read that waits for a worker
// at its final barrier (server/src/server_reads.cc says "it finished its program").
inline bool PeerLeft(const Status& s) {
  return s.code() == StatusCode::kAborted ||
         (s.code() == StatusCode::kFailedPrecondition &&
          s.message().find("(it finished its program") != std::string::npos);
}

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

// Fatal unless `s` is OK; `doing` says what failed ("sending a step's changes"). When another
// worker left the program, ExitPeerLeft instead.
inline void CheckOk(const Status& s, const char* doing,
                    std::source_location loc = std::source_location::current()) {
  if (s.ok()) return;
  if (PeerLeft(s)) ExitPeerLeft(fmt::format("{}: {}", doing, s.ToString()));
  Fatal(fmt::format("{}: {}", doing, s.ToString()), loc);
}

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_
