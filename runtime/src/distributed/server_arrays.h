// ServerArrays: the arrays of an SPMD program that live on the parameter servers while the
// distributed executor runs: every RelaxedArray (a table per array, its staleness), and in a
// data-parallel loop the dense arithmetic arrays the loop writes (a table per (array, staleness)
// that sums every worker's updates). docs/runtime.md, "Relaxed arrays, data-parallel arrays and
// accumulators", says what each worker sees.
//
// Every call is collective (every worker makes it at the same point of the program: SPMD); the
// tables are numbered in creation order, which is the same on every worker.
// Thread safety: none; the executor's thread.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_SERVER_ARRAYS_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_SERVER_ARRAYS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "tessera/client/client.h"
#include "tessera/context.h"
#include "tessera/executor.h"

namespace tessera::internal {

class ServerArrays {
 public:
  // `ctx` and `client` must outlive this object.
  ServerArrays(int rank, Context& ctx, Client& client);
  ~ServerArrays();
  ServerArrays(const ServerArrays&) = delete;
  ServerArrays& operator=(const ServerArrays&) = delete;

  // Before a loop: additions to relaxed arrays made outside loops ran on every worker alike;
  // only worker 0 will send them, so they count once.
  void AdoptSerialRelaxedChanges();
  // Pushes what this worker changed since the last sync; at a clock boundary (`clock`) clocks
  // and reads the tables back within their staleness, otherwise takes what the servers pushed
  // (no wait). `replicated`: a step every worker ran alike (only worker 0 pushes).
  void Sync(bool replicated, bool clock);
  // A data-parallel loop with this staleness starts: of the arrays it may write, the dense
  // arithmetic ones go to the servers; returns their ids (not to be patched over the mesh).
  std::vector<int64_t> BeginDataParallel(int staleness, const std::vector<ArrayBase*>& written);
  // After its last clock: every worker sets the same final values.
  void EndDataParallel(int staleness);
  // Clocks so far (for the worker's final report).
  uint64_t clocks() const;

  // Checkpoints, between loops: the (array id, staleness) of every data-parallel table whose
  // array is alive, in creation order.
  std::vector<std::pair<int64_t, int>> DataParallelTables() const;
  // On resume, once the servers hold the checkpoint's tables for filling: creates these tables
  // again (the servers fill them as they are created) and takes what they hold as the tables at
  // rest, so that the next data-parallel loop computes as an uninterrupted run's would.
  void RestoreDataParallelTables(const std::vector<std::pair<int64_t, int>>& tables);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_SERVER_ARRAYS_H_
