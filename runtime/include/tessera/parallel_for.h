// parallel_for: iterate over the elements of a DistArray (its non-zeros when sparse).
//
//   tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& rating) { ... });
//   tessera::parallel_for(samples, body, tessera::DataParallel{.staleness = 2});
//
// Semantics: the serial loop over the space's positions, in order, is the reference. Without a
// schedule compiled in by tessc (or in serial mode) that is exactly what runs. With a schedule the
// Context's executor may run the iterations in parallel, but only in a way equivalent to some
// serial order -- unless the call carries DataParallel, the user's permission for conflicting
// accesses to run concurrently with reads up to `staleness` clocks stale (the analyzer then checks
// that the conflicting writes are additive).
//
// The body is called as body(const Key<N>& key, T& value) (or body(const Key<N>&)); `value` is the
// element itself and may be written. The body must not insert into `space`, and must not call
// parallel_for (nested loops are not part of the model; this is checked).
//
// The analyzer identifies a call site by its std::source_location (file and line, see schedule.h),
// so do not pass `loc` explicitly and do not wrap parallel_for in helper functions that forward
// a location of their own.
#ifndef TESSERA_PARALLEL_FOR_H_
#define TESSERA_PARALLEL_FOR_H_

#include <cstddef>
#include <cstdint>
#include <source_location>

#include "tessera/common/check.h"
#include "tessera/context.h"
#include "tessera/dist_array.h"
#include "tessera/executor.h"

namespace tessera {

// The user's permission for data-parallel execution of one parallel_for.
struct DataParallel {
  // Clocks a worker's reads of shared arrays may lag behind. Default: 0 (bulk-synchronous).
  int staleness = 0;
  // Additive writes to plain DistArrays from several executor threads of one process: false (the
  // default) runs a worker's share of the loop on one thread, so no update is lost; true lets the
  // threads update concurrently without synchronization (Hogwild!-style: faster, but concurrent
  // updates of one element may be lost). RelaxedArray adds are never lost either way.
  bool lock_free = false;
};

namespace internal {

template <typename T, int N, typename Body>
void RunParallelFor(DistArray<T, N>& space, Body& body, bool data_parallel, int staleness,
                    bool lock_free, const std::source_location& loc) {
  TESSERA_CHECK_MSG(space.valid(), "parallel_for over an empty DistArray");
  Context& ctx = space.context();
  TESSERA_CHECK_MSG(ctx.EnterLoop(), "parallel_for called inside a parallel_for body");
  struct ExitGuard {  // leaves the loop even when the body throws
    Context& ctx;
    ~ExitGuard() { ctx.ExitLoop(); }
  } guard{ctx};
  const LoopSite site = ctx.MakeSite(loc, data_parallel, staleness, lock_free);
  auto range = [&space, &body](int64_t begin, int64_t end) { space.ForEachInRange(begin, end, body); };
  auto list = [&space, &body](const int64_t* positions, size_t count) {
    space.ForEachPosition(positions, count, body);
  };
  ctx.executor().Run(site, space.base(), LoopTask(range, list));
}

}  // namespace internal

template <typename T, int N, typename Body>
void parallel_for(DistArray<T, N>& space, Body&& body,
                  std::source_location loc = std::source_location::current()) {
  internal::RunParallelFor(space, body, /*data_parallel=*/false, /*staleness=*/0,
                           /*lock_free=*/false, loc);
}

template <typename T, int N, typename Body>
void parallel_for(DistArray<T, N>& space, Body&& body, DataParallel permission,
                  std::source_location loc = std::source_location::current()) {
  TESSERA_CHECK_MSG(permission.staleness >= 0, "DataParallel::staleness must be >= 0");
  internal::RunParallelFor(space, body, /*data_parallel=*/true, permission.staleness,
                           permission.lock_free, loc);
}

}  // namespace tessera

#endif  // TESSERA_PARALLEL_FOR_H_
