// How a worker process's allocator returns memory (docs/runtime.md, "Worker memory").
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_MALLOC_POLICY_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_MALLOC_POLICY_H_

#include <cstddef>
#include <string>

namespace tessera::internal {

// Blocks at least this large are mapped on their own and unmapped when freed.
inline constexpr size_t kWorkerMmapThreshold = size_t{1} << 20;

// A worker holds its partitions for the whole job while loading, repartitioning and rotating
// blocks allocate and free large transient buffers. glibc's default raises its mmap threshold
// after each large free (up to 32 MiB), so later buffers come from the heap and stay resident
// after they are freed. Fixing the threshold returns them. Does nothing when the user tuned
// glibc's allocator through its environment (MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES naming
// mmap_threshold). Returns what was done, for the log.
std::string FixWorkerMmapThreshold();

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_MALLOC_POLICY_H_
