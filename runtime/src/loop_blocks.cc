// Blocks of an iteration space (see internal/loop_blocks.h).
#include "internal/loop_blocks.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tessera::internal {

std::vector<int64_t> KeyComponents(const ArrayBase& space, int dim) {
  std::vector<int64_t> c(static_cast<size_t>(space.size()));
  for (int64_t p = 0; p < space.size(); ++p) c[p] = space.key_component(p, dim);
  return c;
}

// Keys are indices below `extent`, so a histogram finds the cuts in linear time; the sort is for
// keys outside it (never for DistArrays).
std::vector<int64_t> EqualCountCuts(const std::vector<int64_t>& values, int64_t extent, int parts) {
  std::vector<int64_t> cuts;
  if (values.empty()) return cuts;
  const size_t n = values.size();
  const bool histogram = extent > 0 && static_cast<size_t>(extent) <= 4 * n + 1024 &&
                         std::all_of(values.begin(), values.end(),
                                     [extent](int64_t v) { return v >= 0 && v < extent; });
  if (!histogram) {
    std::vector<int64_t> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    for (int k = 1; k < parts; ++k) cuts.push_back(sorted[n * static_cast<size_t>(k) / parts]);
    return cuts;
  }
  std::vector<int64_t> count(static_cast<size_t>(extent), 0);
  for (int64_t v : values) ++count[v];
  // The k-th cut is the key holding the element of rank n*k/P in sorted order (as with a sort).
  size_t below = 0;  // elements with key < v
  int k = 1;
  for (int64_t v = 0; v < extent && k < parts; ++v) {
    below += count[v];
    while (k < parts && n * static_cast<size_t>(k) / parts < below) {
      cuts.push_back(v);
      ++k;
    }
  }
  return cuts;
}

int BlockOf(const std::vector<int64_t>& cuts, int64_t v) {
  return static_cast<int>(std::upper_bound(cuts.begin(), cuts.end(), v) - cuts.begin());
}

void FillBlocks(const std::vector<int>& block_of, int num_blocks, Blocks* b) {
  b->offsets.assign(static_cast<size_t>(num_blocks) + 1, 0);
  for (int id : block_of) ++b->offsets[id + 1];
  for (int i = 0; i < num_blocks; ++i) b->offsets[i + 1] += b->offsets[i];
  std::vector<int64_t> fill(b->offsets.begin(), b->offsets.end() - 1);
  b->positions.resize(block_of.size());
  for (size_t p = 0; p < block_of.size(); ++p) b->positions[fill[block_of[p]]++] = static_cast<int64_t>(p);
}

void MarkContiguous(Blocks* b) {
  b->contiguous.assign(static_cast<size_t>(b->num_blocks()), 1);
  for (int64_t blk = 0; blk < b->num_blocks(); ++blk) {
    for (int64_t i = b->offsets[blk] + 1; i < b->offsets[blk + 1]; ++i) {
      if (b->positions[i] != b->positions[i - 1] + 1) {
        b->contiguous[blk] = 0;
        break;
      }
    }
  }
}

void ComputeKeyBounds(const ArrayBase& space, Blocks* b) {
  const int rank = space.rank();
  const int64_t blocks = b->num_blocks();
  b->rank = rank;
  b->key_lo.assign(static_cast<size_t>(blocks * rank), INT64_MAX);
  b->key_hi.assign(static_cast<size_t>(blocks * rank), INT64_MIN);
  for (int d = 0; d < rank; ++d) {
    const std::vector<int64_t> keys = KeyComponents(space, d);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (int64_t i = b->offsets[blk]; i < b->offsets[blk + 1]; ++i) {
        const int64_t k = keys[b->positions[i]];
        lo = std::min(lo, k);
        hi = std::max(hi, k);
      }
      b->key_lo[blk * rank + d] = lo;
      b->key_hi[blk * rank + d] = hi;
    }
  }
}

void RunBlock(const Blocks& b, int64_t block, const LoopTask& task) {
  const int64_t begin = b.offsets[block];
  const int64_t count = b.block_size(block);
  if (count == 0) return;
  if (b.contiguous[block]) {
    task.RunRange(b.positions[begin], b.positions[begin] + count);
  } else {
    task.RunPositions(b.positions.data() + begin, static_cast<size_t>(count));
  }
}

}  // namespace tessera::internal
