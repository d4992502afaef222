// How a worker process's allocator returns memory (docs/runtime.md, "Worker memory").
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_MALLOC_POLICY_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_MALLOC_POLICY_H_

#include <cstddef>
#include <string>

namespace tessera::internal {

// Blocks at least this large are mapped on their own and unmapped when freed.
inline constexpr size_t kWorkerMmapThreshold = size_t{1} << 20;
// Free memory at the top of a heap is given back to the system only beyond this much.
inline constexpr size_t kWorkerTrimThreshold = size_t{8} << 20;

// A worker holds its partitions for the whole job while loading, repartitioning and rotating
// blocks allocate and free large transient buffers. glibc's default raises its mmap threshold
// after each large free (up to 32 MiB), so later buffers come from the heap and stay resident
// after they are freed; fixing the threshold returns them. Fixing it also fixes glibc's trim
// threshold at 128 KiB, so that every exchange's messages (a few hundred KiB, freed by one thread
// while another allocates the next) shrank and regrew the heap, each shrink a system call and a
// TLB flush on every core the process runs on: the trim threshold is raised to
// kWorkerTrimThreshold (bench/README.md, "The current -w 2 picture"); the bulk operations that
// free large buffers trim explicitly (malloc_trim). Each threshold the user tuned through glibc's
// environment (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, or GLIBC_TUNABLES naming it) is
// left alone. Returns what was done, for the log.
std::string SetWorkerMallocPolicy();

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_MALLOC_POLICY_H_
