// The parallel executor: runs each parallel_for under the schedule tessc embedded for its call
// site, on several TBB threads of this process. How each strategy runs, and what a
// data-parallel site means for plain DistArray writes, is in docs/runtime.md ("Parallel executor").
//
// Contract:
//   - a site with a schedule runs in parallel under it; the result equals the serial program's
//     for 1d, independent, 2d and unimodular schedules (those preserve every dependence);
//   - a site without a schedule (program not built with tessc, an ambiguous lookup, or tessc
//     chose to run it serially) runs serially on the calling thread, and the executor logs that
//     once per site, naming which (LoopSite::no_schedule);
//   - a schedule that does not fit its call (unknown version or strategy, another rank, a skew
//     that is not unimodular, ...) aborts with a message naming the call's file:line: running it
//     could be silently wrong, and the fix (rebuild with tessc) is the programmer's.
//   - executor threads are numbered 1..threads (internal::CurrentExecutorSlot); slot 0 stays the
//     calling thread's outside loops, so "slot != 0" means "other loop iterations may be running".
//
// Thread safety: like every Executor, used from the thread that owns the Context.
#ifndef TESSERA_RUNTIME_SRC_EXECUTION_PARALLEL_EXECUTOR_H_
#define TESSERA_RUNTIME_SRC_EXECUTION_PARALLEL_EXECUTOR_H_

#include <cstdint>
#include <memory>

#include "tessera/executor.h"

namespace spdlog {
class logger;
}

namespace tessera::internal {

struct ParallelExecutorOptions {
  // Threads, and blocks per partitioned key dim. REQUIRES: 1 <= threads < kMaxExecutorSlots.
  // Default: 2.
  int threads = 2;
  // Unimodular schedules: a wavefront with fewer positions than this runs on the calling thread,
  // because handing a few iterations to other threads costs more than it saves. Default: 4096.
  int64_t min_parallel_wavefront = 4096;
};

// `logger` receives the once-per-site notes (serial fallback, data-parallel races). REQUIRES: not
// null.
std::unique_ptr<Executor> MakeParallelExecutor(const ParallelExecutorOptions& options,
                                               std::shared_ptr<spdlog::logger> logger);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_EXECUTION_PARALLEL_EXECUTOR_H_
