#include "distributed/malloc_policy.h"

#include <fmt/format.h>
#include <malloc.h>

#include <cstdlib>
#include <string_view>

namespace tessera::internal {
namespace {

// Whether the user tuned glibc's `tunable` (mmap_threshold, trim_threshold) through `env_name`
// or GLIBC_TUNABLES.
bool UserTuned(const char* env_name, std::string_view tunable) {
  if (std::getenv(env_name) != nullptr) return true;
  const char* t = std::getenv("GLIBC_TUNABLES");
  return t != nullptr && std::string_view(t).find(tunable) != std::string_view::npos;
}

}  // namespace

std::string SetWorkerMallocPolicy() {
  std::string mmap;
  if (UserTuned("MALLOC_MMAP_THRESHOLD_", "mmap_threshold")) {
    mmap = "mmap threshold tuned by the user, left alone";
  } else if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kWorkerMmapThreshold)) != 1) {
    mmap = "could not fix the mmap threshold; freed transient buffers may stay resident";
  } else {
    mmap = fmt::format("blocks of {} KiB and more are unmapped when freed",
                       kWorkerMmapThreshold / 1024);
  }
  std::string trim;
  if (UserTuned("MALLOC_TRIM_THRESHOLD_", "trim_threshold")) {
    trim = "trim threshold tuned by the user, left alone";
  } else if (mallopt(M_TRIM_THRESHOLD, static_cast<int>(kWorkerTrimThreshold)) != 1) {
    trim = "could not raise the trim threshold";
  } else {
    trim = fmt::format("a heap keeps up to {} MiB free at its top", kWorkerTrimThreshold >> 20);
  }
  return fmt::format("allocator: {}; {}", mmap, trim);
}

}  // namespace tessera::internal
