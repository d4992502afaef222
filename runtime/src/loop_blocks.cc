// Blocks of an iteration space (see internal/loop_blocks.h).
#include "internal/loop_blocks.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

namespace tessera::internal {

std::vector<int64_t> KeyComponents(const ArrayBase& space, int dim) {
  std::vector<int64_t> c(static_cast<size_t>(space.size()));
  space.key_components(dim, c.data());
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
  std::vector<uint64_t> count(static_cast<size_t>(extent), 0);
  for (int64_t v : values) ++count[v];
  return CutsFromCounts(count, parts);
}

std::vector<int64_t> CutsFromCounts(const std::vector<uint64_t>& count, int parts) {
  std::vector<int64_t> cuts;
  uint64_t n = 0;
  for (uint64_t c : count) n += c;
  if (n == 0) return cuts;
  // The k-th cut is the key holding the element of rank n*k/P in sorted order (as with a sort).
  uint64_t below = 0;  // elements with key < v
  int k = 1;
  const auto extent = static_cast<int64_t>(count.size());
  for (int64_t v = 0; v < extent && k < parts; ++v) {
    below += count[static_cast<size_t>(v)];
    while (k < parts && n * static_cast<uint64_t>(k) / static_cast<uint64_t>(parts) < below) {
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
  bool identity = true;
  for (size_t p = 0; p < block_of.size(); ++p) {
    const int64_t at = fill[block_of[p]]++;
    b->positions[at] = static_cast<int64_t>(p);
    identity = identity && at == static_cast<int64_t>(p);
  }
  if (identity) {
    std::vector<int64_t>().swap(b->positions);
    b->identity = true;
  }
}

void MarkContiguous(Blocks* b) {
  b->contiguous.assign(static_cast<size_t>(b->num_blocks()), 1);
  if (b->identity) return;
  for (int64_t blk = 0; blk < b->num_blocks(); ++blk) {
    for (int64_t i = b->offsets[blk] + 1; i < b->offsets[blk + 1]; ++i) {
      if (b->positions[i] != b->positions[i - 1] + 1) {
        b->contiguous[blk] = 0;
        break;
      }
    }
  }
}

Blocks MakeBlocks(const LoopSchedule& s, const ArrayBase& space, const BlockGrid& grid) {
  Blocks b;
  b.array_id = space.id();
  b.layout_version = space.layout_version();
  b.size = space.size();
  const size_t n = static_cast<size_t>(space.size());
  switch (s.strategy) {
    case LoopStrategy::kIndependent:
    case LoopStrategy::k1D:
    case LoopStrategy::kDataParallel: {
      const std::vector<int64_t> keys = KeyComponents(space, s.space_dim);
      const std::vector<int64_t> cuts =
          grid.space_cuts != nullptr ? *grid.space_cuts
                                     : EqualCountCuts(keys, space.extent(s.space_dim), grid.space_parts);
      std::vector<int> block_of(n);
      for (size_t p = 0; p < n; ++p) block_of[p] = BlockOf(cuts, keys[p]);
      FillBlocks(block_of, grid.space_parts, &b);
      break;
    }
    case LoopStrategy::k2D: {
      const std::vector<int64_t> sk = KeyComponents(space, s.space_dim);
      const std::vector<int64_t> tk = KeyComponents(space, s.time_dim);
      const std::vector<int64_t> scuts =
          grid.space_cuts != nullptr ? *grid.space_cuts
                                     : EqualCountCuts(sk, space.extent(s.space_dim), grid.space_parts);
      const std::vector<int64_t> tcuts =
          grid.time_cuts != nullptr ? *grid.time_cuts
                                    : EqualCountCuts(tk, space.extent(s.time_dim), grid.time_parts);
      std::vector<int> block_of(n);
      for (size_t p = 0; p < n; ++p) {
        block_of[p] = BlockOf(scuts, sk[p]) * grid.time_parts + BlockOf(tcuts, tk[p]);
      }
      FillBlocks(block_of, grid.space_parts * grid.time_parts, &b);
      break;
    }
    case LoopStrategy::kUnimodular: {
      // y0 = skew[0] . key numbers the wavefront; y1 = skew[1] . key orders a wavefront so that
      // its blocks are ranges of the coordinate tessc meant to split.
      std::vector<int64_t> y0(n, 0), y1(n, 0);
      for (int d = 0; d < s.rank; ++d) {
        const int64_t h0 = s.skew[0][d];
        const int64_t h1 = s.rank > 1 ? s.skew[1][d] : 0;
        if (h0 == 0 && h1 == 0) continue;
        const std::vector<int64_t> k = KeyComponents(space, d);
        for (size_t p = 0; p < n; ++p) {
          y0[p] += h0 * k[p];
          y1[p] += h1 * k[p];
        }
      }
      b.positions.resize(n);
      std::iota(b.positions.begin(), b.positions.end(), 0);
      std::sort(b.positions.begin(), b.positions.end(), [&](int64_t a, int64_t c) {
        return std::tie(y0[a], y1[a], a) < std::tie(y0[c], y1[c], c);
      });
      b.offsets.assign(1, 0);
      b.waves.assign(1, 0);
      for (size_t begin = 0; begin < n;) {
        size_t end = begin;
        while (end < n && y0[b.positions[end]] == y0[b.positions[begin]]) ++end;
        // Iterations of one wavefront are independent (every dependence advances y0), so the
        // wavefront may be cut anywhere; cut it into equal parts.
        const size_t m = end - begin;
        const size_t parts = grid.exact_wave_parts
                                 ? static_cast<size_t>(grid.wave_parts)
                                 : std::min<size_t>(m, static_cast<size_t>(grid.wave_parts));
        for (size_t k = 1; k <= parts; ++k) {
          b.offsets.push_back(static_cast<int64_t>(begin + m * k / parts));
        }
        b.waves.push_back(static_cast<int64_t>(b.offsets.size()) - 1);
        begin = end;
      }
      break;
    }
  }
  MarkContiguous(&b);
  return b;
}

const Blocks& BlockCache::Get(const LoopSchedule& s, const ArrayBase& space, int64_t salt,
                              const std::function<Blocks()>& make) {
  constexpr size_t kMaxEntries = 64;
  // What MakeBlocks reads from the schedule: the strategy's way of cutting, and its dims or skew.
  std::vector<int64_t> key = {space.id(), salt, s.rank};
  switch (s.strategy) {
    case LoopStrategy::kIndependent:
    case LoopStrategy::k1D:
    case LoopStrategy::kDataParallel:
      key.insert(key.end(), {0, s.space_dim});
      break;
    case LoopStrategy::k2D:
      key.insert(key.end(), {1, s.space_dim, s.time_dim});
      break;
    case LoopStrategy::kUnimodular:
      key.push_back(2);
      for (const std::vector<int64_t>& row : s.skew) key.insert(key.end(), row.begin(), row.end());
      break;
  }
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.Matches(space)) return it->second;
  if (it == entries_.end() && entries_.size() >= kMaxEntries) entries_.clear();
  return entries_.insert_or_assign(std::move(key), make()).first->second;
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
        const int64_t k = keys[b->position(i)];
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
    task.RunRange(b.position(begin), b.position(begin) + count);
  } else {
    task.RunPositions(b.positions.data() + begin, static_cast<size_t>(count));
  }
}

}  // namespace tessera::internal
