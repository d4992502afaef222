// Blocks of an iteration space: its positions grouped by key ranges, shared by the executors.
//
// Thread safety: pure functions over an ArrayBase that must not change while they run.
#ifndef TESSERA_RUNTIME_SRC_SCHEDULE_LOOP_BLOCKS_H_
#define TESSERA_RUNTIME_SRC_SCHEDULE_LOOP_BLOCKS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "schedule/loop_schedule.h"
#include "tessera/executor.h"

namespace tessera::internal {

// Positions grouped into blocks, CSR: block b is the positions at indices [offsets[b],
// offsets[b + 1]) of the blocks' order, held in one of three ways, the cheapest that fits:
//   identity: index i is position i (every block is a range of consecutive positions, as when a
//     worker's partitioned share is one block); nothing is stored;
//   runs: the blocks' order as runs of consecutive positions, when there are at most half as
//     many runs as positions (a 2d sub-block of documents x words is one run per document);
//     16 bytes per run instead of 8 per position;
//   list: every position (8 bytes each), when runs would cost more.
struct Blocks {
  int64_t array_id = -1;
  uint64_t layout_version = 0;
  int64_t size = -1;
  std::vector<int64_t> positions;  // the list; empty otherwise
  std::vector<int64_t> offsets{0};
  bool identity = false;
  // Runs: run r holds indices [run_index[r], run_index[r + 1]), positions run_begin[r] onwards;
  // a run never crosses a block's end. run_index has one entry more than run_begin (the last is
  // the number of positions); both are empty unless the blocks are held as runs.
  std::vector<int64_t> run_begin, run_index;
  // contiguous[b]: the block's positions are consecutive, so it can run as one range (no
  // per-position key lookup; dense arrays split along dim 0 always are).
  std::vector<uint8_t> contiguous;
  // unimodular only: wavefront w is blocks [waves[w], waves[w + 1]).
  std::vector<int64_t> waves{0};
  // Optional (ComputeKeyBounds): smallest and largest key component of block b on key dim d at
  // [b * rank + d]; an empty block has lo > hi.
  int rank = 0;
  std::vector<int64_t> key_lo, key_hi;

  bool runs() const { return !run_index.empty(); }
  int64_t num_runs() const { return runs() ? static_cast<int64_t>(run_begin.size()) : 0; }
  // The position at index i of the blocks' order (runs: a binary search).
  int64_t position(int64_t i) const {
    if (identity) return i;
    if (!runs()) return positions[i];
    const auto r = std::upper_bound(run_index.begin(), run_index.end(), i) - run_index.begin() - 1;
    return run_begin[r] + (i - run_index[r]);
  }
  int64_t num_blocks() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t block_size(int64_t b) const { return offsets[b + 1] - offsets[b]; }
  bool Matches(const ArrayBase& space) const {
    return array_id == space.id() && layout_version == space.layout_version() &&
           size == space.size();
  }
  // Calls f(lo, hi) for each maximal range [lo, hi) of consecutive positions among the indices
  // [from, to) of block `block` (indices into the block's own order), in order.
  template <typename F>
  void ForEachRange(int64_t block, int64_t from, int64_t to, F&& f) const {
    int64_t i = offsets[block] + from;
    const int64_t end = offsets[block] + to;
    if (i >= end) return;
    if (identity) {
      f(i, end);
    } else if (!contiguous.empty() && contiguous[block]) {
      const int64_t lo = position(i);
      f(lo, lo + (end - i));
    } else if (runs()) {
      auto r = std::upper_bound(run_index.begin(), run_index.end(), i) - run_index.begin() - 1;
      for (; i < end; ++r) {
        const int64_t stop = std::min(end, run_index[r + 1]);
        f(run_begin[r] + (i - run_index[r]), run_begin[r] + (stop - run_index[r]));
        i = stop;
      }
    } else {
      while (i < end) {
        int64_t j = i + 1;
        while (j < end && positions[j] == positions[j - 1] + 1) ++j;
        f(positions[i], positions[j - 1] + 1);
        i = j;
      }
    }
  }
};

// Component `dim` of every position's key.
std::vector<int64_t> KeyComponents(const ArrayBase& space, int dim);

// P - 1 cut values splitting `values` into P key ranges of about equal count; a key's block is
// the number of cuts <= it. Equal keys always share a block (the partition is by key, which is
// what makes blocks of different key ranges independent).
std::vector<int64_t> EqualCountCuts(const std::vector<int64_t>& values, int64_t extent, int parts);

// The same cuts from the count of elements per key value (count[v] for 0 <= v < extent).
std::vector<int64_t> CutsFromCounts(const std::vector<uint64_t>& count, int parts);

// The block of key value `v` under `cuts`.
int BlockOf(const std::vector<int64_t>& cuts, int64_t v);

// Sets b->contiguous.
void MarkContiguous(Blocks* b);

// How many blocks a schedule's positions are cut into.
struct BlockGrid {
  int space_parts = 1;  // along space_dim (all strategies but unimodular)
  int time_parts = 1;   // 2d: along time_dim; block (s, t) is blocks[s * time_parts + t]
  int wave_parts = 1;   // unimodular: parts per wavefront
  // Unimodular: every wavefront gets exactly wave_parts blocks (some may be empty), so block
  // w * wave_parts + q is part q of wavefront w; otherwise up to min(size, wave_parts).
  bool exact_wave_parts = false;
  // Cuts to use instead of those of the space's own elements (a partitioned space, whose cuts
  // come from every worker's elements); null: computed from the space.
  const std::vector<int64_t>* space_cuts = nullptr;
  const std::vector<int64_t>* time_cuts = nullptr;
};

// The blocks of `space` under schedule `s`: equal-count key ranges along the partitioned dims, or
// wavefronts of the skewed key in order; positions increasing inside a block (unimodular: in
// wavefront order).
Blocks MakeBlocks(const LoopSchedule& s, const ArrayBase& space, const BlockGrid& grid);

// Blocks kept across loops, one entry per way of cutting an array: every site that cuts the same
// array along the same dims with the same strategy (an LDA sweep and the log-likelihood loop over
// the same tokens) shares one, made once instead of once per site. An entry is remade when the
// array's layout changes; a cache holding more entries than a program plausibly needs drops them
// all rather than grow without bound. A returned reference is valid until the next Get.
class BlockCache {
 public:
  // The blocks of `space` under `s`, made by `make` when missing or stale. `salt` separates
  // entries whose blocks depend on more than the array and the schedule (empty: nothing more;
  // e.g. the cuts a partitioned array's blocks are made from).
  const Blocks& Get(const LoopSchedule& s, const ArrayBase& space,
                    const std::vector<int64_t>& salt, const std::function<Blocks()>& make);

 private:
  std::map<std::vector<int64_t>, Blocks> entries_;
};

// Fills b->key_lo / b->key_hi for every block and key dim of `space`.
void ComputeKeyBounds(const ArrayBase& space, Blocks* b);

// Runs the indices [from, to) of block `block` of `b` (into the block's own order): as ranges
// when the block is contiguous or held as runs, else position by position.
void RunBlockPart(const Blocks& b, int64_t block, int64_t from, int64_t to, const LoopTask& task);

// Runs block `block` of `b` whole.
void RunBlock(const Blocks& b, int64_t block, const LoopTask& task);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_SCHEDULE_LOOP_BLOCKS_H_
