// Which elements a step of the distributed executor may have written (Tracked), and the patches
// that carry its changes to the peers: the snapshot-and-compare half of docs/runtime.md, "The
// model: SPMD with full copies", and the exact tracking of "Binding arrays".
//
// Thread safety: none; the executor's thread.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_WRITE_TRACKING_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_WRITE_TRACKING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "distributed/patch.h"
#include "schedule/array_binding.h"
#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/executor.h"

namespace tessera::internal {

// A non-relaxed array the running loop may write, and where.
struct Tracked {
  enum class Scope { kAll, kRows, kPositions };
  struct RowDim {
    int key_dim;
    int64_t halo_lo;
    int64_t halo_hi;
  };
  // How changes reach the peers. kDiff: the elements of the step's regions that differ from a
  // snapshot taken before the step. The other two need a bound name and a 2d schedule, where
  // tessc's placement says no other worker writes the rows in question during the loop:
  // kRotate (a `rotating` array): the step's rows whole, no snapshot; kDeferred (a `local`
  // array): nothing per step, the rows of this worker's space blocks whole once after the
  // last step.
  // kPartitioned: a partitioned rotating array; its blocks go to their next holder only
  // (RotatePartitioned), never in the common patches.
  enum class Transfer { kDiff, kRotate, kDeferred, kPartitioned };
  ArrayBase* array = nullptr;
  uint64_t layout = 0;
  Scope scope = Scope::kAll;
  Transfer transfer = Transfer::kDiff;
  std::vector<RowDim> row_dims;                      // kRows: dim 0 follows these key dims
  std::vector<std::pair<int64_t, int64_t>> regions;  // element ranges of the current step
  std::vector<char> snapshot;                        // their bytes before the step, back to back
};
// A piece of a block: its positions [from, to) in block order.
struct Part {
  int64_t block = 0;
  int64_t from = 0;
  int64_t to = 0;
};

// Sorts element ranges and merges overlapping and touching ones.
void MergeRanges(std::vector<std::pair<int64_t, int64_t>>* ranges);

// Which elements of `a` the loop body may write, by what tessc recorded, when not every name is
// bound: arrays are matched by element size and rank. Nothing when `a` is never written.
std::optional<Tracked> TrackingFor(const LoopSchedule& s, const ArrayBase& space, ArrayBase* a);

// With every name bound (schedule/array_binding.h): exactly the arrays the body writes, each only
// where its own placement says it may be written, by id.
std::map<int64_t, Tracked> ExactTracking(const LoopSchedule& s, const SiteBinding& binding,
                                         const ArrayBase& space);

// Before a step: the element ranges `t` may change in `parts`, and a copy of them to compare with
// afterwards (none for transfers that send whole rows or nothing per step).
void TrackStep(const Blocks& b, const std::vector<Part>& parts, Tracked* t);

// Every element of t's regions, read from the array when encoded (PatchData::source) / only
// those that differ from the snapshot (`additive`: as differences, for arithmetic arrays).
PatchData WholePatch(const Tracked& t);
PatchData DiffPatch(const Tracked& t, bool additive);

// Aborts when t's array changed layout since tracking began (a loop body inserted or reordered).
void CheckLayout(const Tracked& t);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_WRITE_TRACKING_H_
