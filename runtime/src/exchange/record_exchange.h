// Moving the stored elements of sparse arrays between the workers of a distributed job, for
// arrays the job keeps partitioned (RecordPartition, docs/runtime.md "Partitioned data"): the
// loaders place records on their holders this way instead of giving every worker every record,
// and the distributed executor moves them when a loop needs another layout, or gathers an array
// whole when code may touch any of its elements. Messages are Cap'n Proto (RecordShipment,
// KeyCounts in tessera.capnp) carried by the Context's all-to-all and all-gather.
//
// Every function is collective: every worker calls it at the same point with the same plan.
#ifndef TESSERA_RUNTIME_SRC_EXCHANGE_RECORD_EXCHANGE_H_
#define TESSERA_RUNTIME_SRC_EXCHANGE_RECORD_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exchange/collectives.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal {

// Every worker's vector, by rank. REQUIRES: every worker passes a vector of the same size.
Result<std::vector<std::vector<uint64_t>>> AllGatherCounts(const AllGatherFn& all_gather,
                                                           const std::vector<uint64_t>& local);

// Element counts per key value summed over the workers. REQUIRES: every worker passes a vector of
// the same size.
Result<std::vector<uint64_t>> SumCounts(const AllGatherFn& all_gather, std::vector<uint64_t> local);

// counts[v] elements of key value v in `dim` of `a` held here (extent(dim) entries).
std::vector<uint64_t> LocalKeyCounts(const ArrayBase& a, int dim);

// Where each worker's share of a partitioned array starts: worker w holds the elements whose
// key[dim] is in [bounds[w], bounds[w + 1]); bounds[0] = 0 and bounds[W] = extent(dim).
struct RecordPlan {
  int dim = 0;
  std::vector<int64_t> bounds;
  int64_t global_size = 0;
  bool operator==(const RecordPlan&) const = default;
};

// The worker whose range of `plan` holds key value `v` (in [0, extent)).
size_t OwnerOf(const RecordPlan& plan, int64_t v);

// The plan whose ranges are the unions of `per_worker` consecutive blocks of `cuts` (the W *
// per_worker - 1 cuts of EqualCountCuts), so that every worker holds its blocks' elements.
RecordPlan PlanFromCuts(int dim, int64_t extent, const std::vector<int64_t>& cuts, int per_worker,
                        int num_workers, int64_t global_size);

// Moves the elements of `arrays` (partitioned or whole, sparse) so that worker `rank` holds those
// plans[i] gives it, in serial order; each array is then partitioned as its plan says.
// Errors: the exchange's (a peer gone, a malformed message); the arrays are then undefined.
// When `bytes_sent` is given, the bytes sent to other workers are added to it.
Status Repartition(const AllToAllFn& all_to_all, int rank, const std::vector<ArrayBase*>& arrays,
                   const std::vector<RecordPlan>& plans, uint64_t* bytes_sent = nullptr);

// Repartition's exchange, for callers that built the outgoing elements themselves: out[w][i] are
// the elements of arrays[i] for worker w (out[rank] stays here), each batch in serial order.
// Replaces the arrays' elements by what this worker receives.
Status ExchangeRecords(const AllToAllFn& all_to_all, int rank, const std::vector<ArrayBase*>& arrays,
                       const std::vector<RecordPlan>& plans,
                       std::vector<std::vector<RecordBatch>> out, uint64_t* bytes_sent = nullptr);

// Makes a partitioned array whole: every worker gets every element, in serial order.
Status GatherWhole(const AllGatherFn& all_gather, ArrayBase* array, uint64_t* bytes_sent = nullptr);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_EXCHANGE_RECORD_EXCHANGE_H_
