// RowLayout: which workers hold a valid copy of each row of a dense array that the distributed
// executor keeps partitioned between loops (docs/runtime.md, "Partitioned arrays").
//
// An interval map from row ranges to a set of holders (a bit per worker). Every worker keeps the
// same layouts, because every change is computed from what all workers know alike (the schedules
// and the iteration spaces' blocks), so rows move between workers without requests: a worker
// that needs rows it does not hold receives them from the lowest-ranked holder.
//
// Thread safety: none; used by the executor's thread.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_ROW_LAYOUT_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_ROW_LAYOUT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace tessera::internal {

// At most 64 workers take part in partitioned layouts (a holder set is one word); larger jobs
// keep arrays replicated.
inline constexpr int kMaxLayoutWorkers = 64;

struct RowRange {
  int64_t lo = 0;  // first row
  int64_t hi = 0;  // one past the last row
};

// Sorts and merges overlapping or touching ranges; drops empty ones.
std::vector<RowRange> Normalize(std::vector<RowRange> ranges);

class RowLayout {
 public:
  // Every worker holds every row (an array made by code outside loops, which every worker runs).
  // REQUIRES: 1 <= workers <= kMaxLayoutWorkers.
  RowLayout(int64_t rows, int workers);

  int64_t rows() const { return rows_; }
  int workers() const { return workers_; }
  uint64_t all() const;
  bool replicated() const;
  // Rows every worker holds, as a count (for reports).
  int64_t RowsHeldBy(int worker) const;

  // Calls f(lo, hi, holders) for the maximal pieces of [lo, hi) with one holder set, in order.
  void ForEach(int64_t lo, int64_t hi,
               const std::function<void(int64_t, int64_t, uint64_t)>& f) const;
  // Sets the holders of [lo, hi).
  void Assign(int64_t lo, int64_t hi, uint64_t holders);

 private:
  int64_t rows_;
  int workers_;
  std::map<int64_t, uint64_t> starts_;  // first row of a piece -> its holders; starts_[0] exists
};

// One transfer of a layout change: rows [lo, hi) go from worker `from` to worker `to`.
struct RowTransfer {
  int from = 0;
  int to = 0;
  int64_t lo = 0;
  int64_t hi = 0;
};

// The transfers that give every worker w the rows needs[w] (each from the lowest-ranked holder),
// and the layout afterwards: a row that some worker needs is held by exactly the workers that
// need it (the others drop their copies); other rows keep their holders.
// REQUIRES: needs.size() == layout->workers(); ranges within [0, rows).
std::vector<RowTransfer> Redistribute(const std::vector<std::vector<RowRange>>& needs,
                                      RowLayout* layout);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_ROW_LAYOUT_H_
