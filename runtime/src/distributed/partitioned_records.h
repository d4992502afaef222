// PartitionedRecords: the distributed executor's side of sparse arrays a job keeps partitioned
// (RecordPartition; docs/runtime.md, "Partitioned data").
//
// A loader keeps an array partitioned when tessc proved only loops touch it; each worker then
// holds only the stored elements in its key range. Before each loop this class makes the layout
// fit the loop: the iteration space of an independent, 1d, 2d or data-parallel loop is moved so
// that every worker holds exactly the elements of its own blocks (nothing moves when the layout
// already fits), and the block cuts and key bounds, which depend on every worker's elements, are
// computed from all of them. Any partitioned array the loop may touch another way (as a non-space
// array, through an unbound name, in an unimodular loop or one without a schedule) is first made
// whole on every worker, and stays whole.
//
// Every public call is collective (SPMD): every worker makes it at the same point.
//
// Thread safety: none; the executor's thread.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_PARTITIONED_RECORDS_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_PARTITIONED_RECORDS_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "exchange/record_exchange.h"
#include "schedule/array_binding.h"
#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/context.h"

namespace spdlog {
class logger;
}

namespace tessera::internal {

class PartitionedRecords {
 public:
  struct Options {
    int rank = 0;
    int num_workers = 1;
    int threads = 1;         // partitions per worker
    int pipeline_depth = 2;  // 2d: time sub-blocks per partition
  };
  // `ctx` must outlive this object; the functions are the executor's collectives.
  PartitionedRecords(const Options& options, Context& ctx, AllGatherFn all_gather,
                     AllToAllFn all_to_all);

  // Before a scheduled loop: gathers what the loop may touch another way, and lays out a
  // partitioned iteration space for it. Returns whether `space` is partitioned for this loop;
  // then grid() gives the cuts its blocks must use.
  bool Place(const LoopSchedule& s, const ArrayBase& space, const SiteBinding& binding);
  // Before a loop without a schedule: everything whole.
  void GatherAll();
  // Makes one partitioned array whole (also for serial code: Context::GatherWhole).
  void GatherWhole(ArrayBase& array);
  // The cuts for the partitioned space of the loop Place was last called for.
  void FillGrid(BlockGrid* grid) const;
  // Key bounds of every block (ComputeKeyBounds) from every worker's elements.
  void CombineKeyBounds(Blocks* b);
  // Bytes of elements sent to other workers so far (relayouts and gathers).
  uint64_t bytes_sent() const { return stats_.bytes_sent; }
  // Elements held, moved and gathered, at info level.
  void Report(spdlog::logger& log) const;

 private:
  const std::vector<int64_t>& GlobalCuts(const ArrayBase& a, int dim, int parts);

  Options options_;
  Context& ctx_;
  AllGatherFn all_gather_;
  AllToAllFn all_to_all_;
  // Global counts per key value, by (array id, dim): valid while the array stays partitioned (a
  // partitioned array's elements never change keys, only holders).
  std::map<std::pair<int64_t, int>, std::vector<uint64_t>> counts_;
  std::map<std::tuple<int64_t, int, int>, std::vector<int64_t>> cuts_;
  std::vector<int64_t> space_cuts_, time_cuts_;
  struct Stats {
    uint64_t repartitions = 0;
    uint64_t gathers = 0;
    uint64_t bytes_sent = 0;
  } stats_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_PARTITIONED_RECORDS_H_
