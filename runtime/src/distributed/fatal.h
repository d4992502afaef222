// How the distributed executor's parts stop a worker: when the workers can no longer agree on the
// program's state (a peer gone, a malformed or unexpected message), going on would compute
// something silently wrong, so the worker aborts with a message naming the problem.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_

#include <fmt/format.h>

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

// Fatal unless `s` is OK; `doing` says what failed ("sending a step's changes").
inline void CheckOk(const Status& s, const char* doing,
                    std::source_location loc = std::source_location::current()) {
  if (!s.ok()) Fatal(fmt::format("{}: {}", doing, s.ToString()), loc);
}

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_FATAL_H_
