#include "distributed/malloc_policy.h"

#include <fmt/format.h>
#include <malloc.h>

#include <cstdlib>
#include <string_view>

namespace tessera::internal {
namespace {

// One of glibc's thresholds, which the user may tune through `env_name` or GLIBC_TUNABLES.
struct Threshold {
  const char* env_name;      // e.g. MALLOC_MMAP_THRESHOLD_
  std::string_view tunable;  // its name in GLIBC_TUNABLES, e.g. mmap_threshold
  int param;                 // mallopt's M_*
  size_t value;
  std::string_view done;  // what setting it does, for the log; {} is the value in MiB
};

// Sets `t` unless the user tuned it; says what happened.
std::string Set(const Threshold& t) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv(t.env_name) != nullptr ||
      (tunables != nullptr &&
       std::string_view(tunables).find(t.tunable) != std::string_view::npos)) {
    return fmt::format("{} tuned by the user, left alone", t.tunable);
  }
  if (mallopt(t.param, static_cast<int>(t.value)) != 1) {
    return fmt::format("could not set {} to {} B", t.tunable, t.value);
  }
  return fmt::format(fmt::runtime(t.done), t.value >> 20);
}

}  // namespace

std::string SetWorkerMallocPolicy() {
  return fmt::format(
      "allocator: {}; {}",
      Set({"MALLOC_MMAP_THRESHOLD_", "mmap_threshold", M_MMAP_THRESHOLD, kWorkerMmapThreshold,
           "blocks of {} MiB and more are unmapped when freed"}),
      Set({"MALLOC_TRIM_THRESHOLD_", "trim_threshold", M_TRIM_THRESHOLD, kWorkerTrimThreshold,
           "a heap keeps up to {} MiB free at its top"}));
}

}  // namespace tessera::internal
