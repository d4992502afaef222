// DistArray::permuted where the data lives: a sparse array's elements under a permutation of
// their key components (result key[d] = source key[perm[d]]), stored in the result's key order.
//
//   - This process alone, or the source whole and the result not to be kept partitioned: the
//     result is whole, made from the local source (no message).
//   - The source whole (identical on every worker, as a whole array is) and the result kept
//     partitioned: each worker keeps only the elements of its key[0] range (no message).
//   - The source partitioned: every element goes once, from its holder to the worker holding its
//     new key[0] range, in rounds of at most `round_elements` elements per sender (Cap'n Proto
//     RecordShipment messages through the all-to-all), each into its sender's part of its row
//     (rows of a source in key order split by rank then arrive sorted); the result is that
//     worker's share, or gathered whole afterwards when it may not stay partitioned.
// Ranges are equal-count ranges of the new key[0] (CutsFromCounts over every worker's elements,
// one range per worker), the ranges a loader gives (partitioned_load.cc). Peak memory per worker:
// its share of the source and of the result, plus one round's messages and the longest row.
//
// Collective when the source is partitioned or the result kept partitioned: every worker calls
// PermuteRecords at the same point with the same arguments (SPMD).
#ifndef TESSERA_RUNTIME_SRC_PERMUTE_PERMUTE_RECORDS_H_
#define TESSERA_RUNTIME_SRC_PERMUTE_PERMUTE_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exchange/record_exchange.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal {

struct PermuteOptions {
  int rank = 0;
  int num_workers = 1;
  // Context::AllGather and AllToAll; empty for a process alone (then the source must be whole).
  AllGatherFn all_gather;
  AllToAllFn all_to_all;
  // The result may stay partitioned by its key[0] (Context::PartitionsLoadedArray of its origin).
  bool keep_partitioned = false;
  // Elements a worker ships per round at most; rounds are smaller still where 64 KiB of keys and
  // values would be fewer elements (2Ki rank-3 int64 elements). Default: 2^18.
  size_t round_elements = size_t{1} << 18;
};

// What this worker ended with.
struct PermuteReport {
  bool partitioned = false;  // the result is partitioned (else whole)
  int64_t held = 0;          // elements of the result held here
  int64_t lo = 0, hi = 0;    // partitioned: the key[0] range held here
  int rounds = 0;            // exchange rounds (0: no element travelled)
  uint64_t bytes_sent = 0;   // to other workers, the result's gathering included
  double order_seconds = 0;  // putting each row of the result in key order (FinishRows)
};

// Fills `result` (sparse, shape (source.extent(perm[0]), ...), element_bytes() like source's)
// with the elements of `source` under `perm`, replacing what it held. REQUIRES: perm a
// permutation of [0, source.rank()); a partitioned source only with all_gather and all_to_all.
// Errors: the exchange's (a peer gone) and DataLoss for a peer's malformed or misdirected
// elements; `result` is then undefined.
Result<PermuteReport> PermuteRecords(const PermuteOptions& options, const ArrayBase& source,
                                     const std::vector<int>& perm, ArrayBase* result);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_PERMUTE_PERMUTE_RECORDS_H_
