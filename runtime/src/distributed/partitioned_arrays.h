// PartitionedArrays: the distributed executor's dense arrays that stay partitioned between
// loops (docs/runtime.md, "Partitioned arrays").
//
// A dense array that tessc proved only loop bodies touch (loop_only), bound by name, and placed
// `local` or `rotating` along its rows without a halo stays partitioned: each worker holds only
// the rows its partitions need (RowLayout), receives the rows it lacks from their holder at the
// start of a loop, hands rotating blocks to their next holder only, and releases the memory of
// rows it no longer holds. Any loop that may touch such an array another way first makes it whole
// again on every worker. Arrays whose factory deferred their values (ArrayBase::deferred_init)
// are computed here, row by row, where they are first needed.
//
// Every public call except Rotate and Finish is collective: every worker of the job makes it at
// the same point of the program, with the same arguments (SPMD), because each may exchange rows
// with every peer.
//
// Thread safety: none; the executor's thread.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_PARTITIONED_ARRAYS_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_PARTITIONED_ARRAYS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "distributed/patch.h"
#include "distributed/peer_mesh.h"
#include "distributed/row_layout.h"
#include "schedule/array_binding.h"
#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/context.h"

namespace spdlog {
class logger;
}

namespace tessera::internal {

class PartitionedArrays {
 public:
  struct Options {
    int rank = 0;
    int num_workers = 1;
    int threads = 1;         // executor threads per worker (partitions per worker)
    int pipeline_depth = 2;  // 2d: sub-blocks per time block
  };
  enum class Role { kNone, kLocal, kRotating };

  // `ctx` and `mesh` must outlive this object.
  PartitionedArrays(const Options& options, Context& ctx, PeerMesh& mesh);
  ~PartitionedArrays();
  PartitionedArrays(const PartitionedArrays&) = delete;
  PartitionedArrays& operator=(const PartitionedArrays&) = delete;

  // Before a scheduled loop (collective; `tag` is the loop's exchange tag): every partitioned
  // array in the layout this loop needs, or whole when the loop may touch it another way.
  void Place(const LoopSchedule& s, const Blocks& b, const SiteBinding& binding, uint64_t tag);
  // Before a loop without a schedule, which may touch any array (collective).
  void MaterializeAll(uint64_t tag);
  // The running loop's partitioned arrays by id: kLocal ones are written only by their holder
  // and must not be sent; kRotating ones travel only through Rotate.
  const std::map<int64_t, Role>& roles() const;
  // After 2d step r: the rotating blocks this worker ran, for their next holders (by peer), as
  // patches that read the array (PatchData::source) when encoded.
  void Rotate(const Blocks& b, int r, std::vector<std::vector<PatchData>>* per_peer);
  // After the patches of the last Rotate are encoded: releases the memory of the rows they sent.
  void ReleaseSent();
  // The running 2d loop's phase: partition q runs time block (q * S + r + phase) mod (P * S) in
  // step r. Nonzero when the loop rotates arrays that rotated before: it starts where their
  // last rotation left them.
  int64_t phase() const;
  // After the loop's last step.
  void Finish(const LoopSchedule& s, const Blocks& b);
  // A loop the program ran before the checkpoint it resumes from (not run again): counts its
  // rotations, so that the loops after it take the phases they took the first time.
  void Skipped(const LoopSchedule& s, const SiteBinding& binding);
  // Checkpoints, between loops: when `a` is kept partitioned, calls f(lo, hi, holders) for its
  // rows that some worker holds and has computed (holders: a bit per worker) and returns true;
  // false when `a` is whole on every worker.
  bool HeldRows(const ArrayBase& a, const std::function<void(int64_t, int64_t, uint64_t)>& f);
  // Whether loop `s` can keep arrays partitioned at all (otherwise Place makes every one whole).
  bool Placeable(const LoopSchedule& s, const SiteBinding& binding) const;
  // After every worker restored all of `a` from a checkpoint: whole everywhere, nothing left to
  // compute.
  void RestoredWhole(const ArrayBase& a);
  // Before this worker restores its rows of `a` from a checkpoint whose job (of as many workers)
  // kept `a` partitioned: each row of `held` is held by its worker only, rows in none are still to
  // be computed where needed (deferred arrays); releases the memory of the rows this worker does
  // not hold. False, changing nothing, when `a` cannot be kept partitioned (one worker, more than
  // kMaxLayoutWorkers, not a dense array of rows, or a piece outside it). Not collective.
  bool HoldRestored(const ArrayBase& a, const std::vector<std::pair<RowRange, int>>& held);
  // Code outside loops touches row `row` of `a` (Context::FetchRow; collective, `tag` a fresh
  // exchange tag): unless every worker holds the row computed, its lowest holder sends it to every
  // other worker (or every worker computes it from the factory's recipe), and all keep it -- with
  // the rows around it, 64 KiB of them, for code that scans the array.
  void FetchRow(ArrayBase& a, int64_t row, uint64_t tag);
  // Around each loop: while it runs (`in_loop`) no array asks serial code to fetch rows; after it,
  // each partitioned array does while some row is held elsewhere or not computed yet
  // (ArrayBase::set_rows_elsewhere). Not collective.
  void GuardSerialAccess(bool in_loop);
  // Bytes sent so far: rotating blocks, and rows moved between layouts.
  uint64_t rotation_bytes() const;
  uint64_t repartition_bytes() const;
  // Rows held per array and bytes moved, at info level.
  void Report(spdlog::logger& log) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_PARTITIONED_ARRAYS_H_
