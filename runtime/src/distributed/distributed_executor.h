// The distributed executor: runs each parallel_for of an SPMD program across the worker
// processes of a job (and several threads in each), under the schedule tessc embedded for its
// call site. docs/runtime.md ("Distributed executor") describes how each strategy runs.
//
// Model: every worker holds a full copy of every DistArray and runs the same program; code
// outside parallel_for computes the same on every worker. A loop runs each worker's share of the
// schedule's blocks; after every step the worker sends the elements it changed (a patch, found by
// comparing with a snapshot) to every other worker, which apply them in step order, so that
//   - before a step, every write the step depends on has arrived (2d: the time block's previous
//     holder, S steps earlier with pipeline depth S; unimodular: the previous wavefront;
//     data-parallel: clocks older than the staleness bound), and
//   - when the loop returns, every worker's arrays equal the serial program's result (1d, 2d,
//     unimodular, independent) or the data-parallel sum of every worker's additive updates.
// RelaxedArrays live on the parameter servers: additive deltas go through the Client at every
// step, which is a clock, and reads refresh from the servers within the array's staleness.
// In data-parallel loops, dense arithmetic arrays live on the servers too (SSP with the site's
// staleness); sparse ones exchange additive patches over the mesh under the same bound.
// Accumulators are summed across workers at the end of every loop.
//
// A site without a schedule runs whole on every worker (replicated), which is still the serial
// result; relaxed updates and accumulator additions of such a loop count once.
//
// Thread safety: like every Executor, used from the thread that owns the Context.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_DISTRIBUTED_EXECUTOR_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_DISTRIBUTED_EXECUTOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distributed/row_layout.h"
#include "exchange/exchange_rounds.h"
#include "tessera/client/client.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"
#include "tessera/traffic.h"

namespace spdlog {
class logger;
}

namespace tessera {
class Context;
}

namespace tessera::internal {

struct DistributedExecutorOptions {
  int rank = 0;
  int num_workers = 1;
  // The parameter-server client (rank, coordinator, secret, managed communication).
  ClientOptions client;
  // Where this worker's peers reach it, e.g. "tcp://127.0.0.1:0". Default: loopback, any port.
  std::string peer_bind = "tcp://127.0.0.1:0";
  // Executor threads per worker (each owns a partition). REQUIRES: 1 <= threads <
  // kMaxExecutorSlots. Default: 1.
  int threads = 1;
  // 2d: sub-blocks per time block. Each time block is handed over in this many pieces, so a
  // worker computes while the next piece travels; 1 waits for every hand-over. Default: 2.
  int pipeline_depth = 2;
  // data_parallel: clocks per loop; after each, a worker's additive updates go to the others,
  // and its reads lag at most the site's staleness in clocks. Default: 4.
  int data_parallel_clocks = 4;
  // data_parallel: times per clock a worker sends its updates to the servers and takes what
  // they have pushed, without waiting (the last is the clock itself). Above 1 it gives managed
  // communication something to send between clock boundaries. Default: 4.
  int data_parallel_flushes = 4;
  // Unimodular: a wavefront with fewer positions than this runs whole on every worker instead
  // of being split (no hand-over needed). Default: 4096.
  int64_t min_parallel_wavefront = 4096;
  // How long to wait for a peer. Default: 10 minutes.
  std::chrono::milliseconds timeout{600000};
};

class DistributedExecutor final : public Executor {
 public:
  // Connects to the job (parameter servers and peer mesh); Unavailable/InvalidArgument when it
  // cannot. `ctx` owns the executor and must outlive it.
  static Result<std::unique_ptr<DistributedExecutor>> Start(
      const DistributedExecutorOptions& options, Context& ctx,
      std::shared_ptr<spdlog::logger> logger);
  ~DistributedExecutor() override;

  std::string_view name() const override;
  int concurrency() const override;
  void Run(const LoopSite& site, const ArrayBase& space, const LoopTask& task) override;
  void Skipped(const LoopSite& site, const ArrayBase& space) override;

  // See Context::AllGather, AllToAll, GatherWhole and FetchRow.
  Result<std::vector<std::string>> AllGather(std::string bytes);
  Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each);
  // An all-to-all in rounds (PeerMesh::ExchangeRounds); collective like AllToAll.
  Status ExchangeRounds(const RoundsSpec& spec);
  void GatherWhole(ArrayBase& array);
  void FetchRow(ArrayBase& array, int64_t row);
  // See Context::SavePartitioned (distributed/array_save.h).
  std::optional<Status> SavePartitioned(const ArrayBase& array, const std::string& path, bool text);
  // Bytes sent so far, by kind (Context::traffic).
  Traffic traffic() const;

  // Checkpoints (checkpoint/checkpoint_host.h), between loops. Collective: relaxed arrays read
  // back from the servers with every worker's updates in.
  void SettleForCheckpoint();
  // See PartitionedArrays::HeldRows and RestoredWhole.
  bool HeldRows(const ArrayBase& a, const std::function<void(int64_t, int64_t, uint64_t)>& f);
  void RestoredWhole(const ArrayBase& a);
  // See PartitionedArrays::HoldRestored.
  bool HoldRestored(const ArrayBase& a, const std::vector<std::pair<RowRange, int>>& held);
  // See ServerArrays::DataParallelTables and RestoreDataParallelTables.
  std::vector<std::pair<int64_t, int>> DataParallelTables();
  void RestoreDataParallelTables(const std::vector<std::pair<int64_t, int>>& tables);

  class Impl;

 private:
  explicit DistributedExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_DISTRIBUTED_EXECUTOR_H_
