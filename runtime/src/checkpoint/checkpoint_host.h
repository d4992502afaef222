// CheckpointHost: what checkpoints need from the executor that runs the loops -- who holds which
// rows of an array between loops, a way to make every copy current, and an all-gather. The
// distributed executor's host answers from its partitioned layouts and parameter-server mirrors;
// the local host (serial and threaded executors) holds everything alone.
//
// Every call except HeldRows and DataParallelTables is collective in a distributed job (every
// worker makes it at the same loop boundary, SPMD).
//
// Thread safety: none; the thread that owns the Context.
#ifndef TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINT_HOST_H_
#define TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINT_HOST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal {
class DistributedExecutor;
}

namespace tessera::internal::checkpoint {

// Rows [lo, hi) of a dense array, held by `worker`.
struct HeldPiece {
  int64_t lo = 0;
  int64_t hi = 0;
  int worker = 0;
};

class CheckpointHost {
 public:
  virtual ~CheckpointHost() = default;
  virtual int rank() const = 0;
  virtual int num_workers() const = 0;
  // Every worker's bytes, in rank order.
  virtual Result<std::vector<std::string>> AllGather(std::string bytes) = 0;
  // At a loop boundary: every copy this worker holds is current (relaxed arrays: read back from
  // the parameter servers with every worker's updates in).
  virtual void Settle() = 0;
  // Calls f(lo, hi, holders) for the rows of `a` valid between loops, with the set of workers
  // (a bit per rank) holding each; rows nobody has computed yet (a deferred array's) are left out.
  // A row is `ElementsPerRow(a)` elements; a sparse array's rows are its positions.
  virtual void HeldRows(const ArrayBase& a,
                        const std::function<void(int64_t, int64_t, uint64_t)>& f) = 0;
  // After every worker restored all of `a`: it is whole on every worker, nothing left to compute.
  virtual void Restored(const ArrayBase& a) = 0;
  // Before restoring `a`, a dense array that the checkpoint's job (of as many workers) kept
  // partitioned: from now on each row of `pieces` is held by its worker only, rows in no piece
  // are still to be computed where needed (a deferred array's), and the memory of the rows this
  // worker does not hold is released; the caller then reads this worker's rows only. False,
  // changing nothing, when `a` cannot be kept partitioned here: it is then restored whole.
  // Not collective: every worker computes the same layout from the same pieces.
  virtual bool HoldRestored(const ArrayBase& a, const std::vector<HeldPiece>& pieces) {
    (void)a;
    (void)pieces;
    return false;
  }
  // Makes a partitioned sparse array whole on every worker (RecordPartition); nothing for others.
  virtual void GatherWhole(ArrayBase& a) { (void)a; }

  // The data-parallel tables that exist (the same on every worker), for arrays still alive.
  virtual std::vector<DataParallelTable> DataParallelTables() { return {}; }
  // On resume, after the servers were told to load the checkpoint's tables: creates `tables`
  // again, which the servers fill from their files, and takes them as the tables at rest.
  virtual void RestoreDataParallelTables(const std::vector<DataParallelTable>& tables) {
    (void)tables;
  }

  // Whether relaxed arrays live in parameter-server tables, which the servers then write into
  // checkpoints themselves (SaveServerTables), and load back on resume. Not collective: only
  // worker 0 asks the servers.
  virtual bool HasServerTables() const { return false; }
  // Every server writes its shard of `tables` into checkpoint directory `checkpoint` ("ckpt-N");
  // its files, in server order.
  virtual Result<std::vector<FileRecord>> SaveServerTables(const std::string& checkpoint,
                                                           const std::vector<std::string>& tables);
  // Every server loads `files` and fills the tables from them as they are created again.
  virtual Status RestoreServerTables(const std::string& checkpoint,
                                     const std::vector<FileRecord>& files);
};

// Elements per row in HeldRows' sense: 1 for sparse arrays, else value_count / extent(0).
int64_t ElementsPerRow(const ArrayBase& a);

// A worker alone: holds every row, Settle and Restored do nothing.
std::unique_ptr<CheckpointHost> MakeLocalHost();
// The distributed executor's worker. `executor` must outlive the host.
std::unique_ptr<CheckpointHost> MakeDistributedHost(DistributedExecutor& executor, int rank,
                                                    int num_workers);

}  // namespace tessera::internal::checkpoint

#endif  // TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINT_HOST_H_
