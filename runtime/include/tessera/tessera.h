// Tessera's programming model: include this one header.
//
//   tessera::Context           context.h        runtime state; serial unless launched
//   tessera::Key<N>            key.h            indices of one element
//   tessera::DistArray<T, N>   dist_array.h     dense or sparse N-d array, tracked by the analyzer
//   tessera::RelaxedArray<T,N> relaxed_array.h  parameter-server table, additive writes, stale reads
//   tessera::Accumulator<T>    accumulator.h    reductions read after a loop
//   tessera::parallel_for      parallel_for.h   the loop the analyzer parallelizes
//   tessera::DataParallel      parallel_for.h   permission for data-parallel execution
//   tessera::load_triples ...  data.h           readers for rating triples and UCI bag-of-words
//   tessera::MetricsLog        metrics.h        per-epoch metrics as JSON lines (and SumOverWorkers)
//
// See docs/programming-model.md.
#ifndef TESSERA_TESSERA_H_
#define TESSERA_TESSERA_H_

#include "tessera/accumulator.h"
#include "tessera/array_io.h"
#include "tessera/context.h"
#include "tessera/data.h"
#include "tessera/dist_array.h"
#include "tessera/executor.h"
#include "tessera/key.h"
#include "tessera/metrics.h"
#include "tessera/parallel_for.h"
#include "tessera/relaxed_array.h"
#include "tessera/schedule.h"

#endif  // TESSERA_TESSERA_H_
