#include "distributed/malloc_policy.h"

#include <fmt/format.h>
#include <malloc.h>

#include <cstdlib>
#include <string_view>

namespace tessera::internal {

std::string FixWorkerMmapThreshold() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) {
    return "allocator: MALLOC_MMAP_THRESHOLD_ set by the user, left alone";
  }
  if (const char* t = std::getenv("GLIBC_TUNABLES");
      t != nullptr && std::string_view(t).find("mmap_threshold") != std::string_view::npos) {
    return "allocator: mmap_threshold tuned through GLIBC_TUNABLES, left alone";
  }
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kWorkerMmapThreshold)) != 1) {
    return "allocator: could not fix the mmap threshold; freed transient buffers may stay resident";
  }
  return fmt::format("allocator: blocks of {} KiB and more are unmapped when freed",
                     kWorkerMmapThreshold / 1024);
}

}  // namespace tessera::internal
