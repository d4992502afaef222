// Blocks of an iteration space (see schedule/loop_blocks.h).
#include "schedule/loop_blocks.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

namespace tessera::internal {

std::vector<int64_t> KeyComponents(const ArrayBase& space, int dim) {
  std::vector<int64_t> c(static_cast<size_t>(space.size()));
  space.key_components(dim, 0, space.size(), c.data());
  return c;
}

namespace {

// Positions whose keys are read at a time when blocks are made: walking a space of n elements
// holds this many keys per dim, not n (8 bytes each).
constexpr int64_t kKeyChunk = int64_t{1} << 15;

// The cuts along `dim` into `parts` ranges of about equal count (EqualCountCuts), counting the
// keys chunk by chunk when they are indices below the extent (always, for DistArrays).
std::vector<int64_t> DimCuts(const ArrayBase& space, int dim, int parts) {
  const int64_t n = space.size(), extent = space.extent(dim);
  if (n == 0) return {};
  if (extent <= 0 || extent > 4 * n + 1024) {
    return EqualCountCuts(KeyComponents(space, dim), extent, parts);
  }
  std::vector<uint64_t> count(static_cast<size_t>(extent), 0);
  std::vector<int64_t> keys(static_cast<size_t>(std::min(n, kKeyChunk)));
  for (int64_t first = 0; first < n; first += kKeyChunk) {
    const int64_t m = std::min(kKeyChunk, n - first);
    space.key_components(dim, first, m, keys.data());
    for (int64_t i = 0; i < m; ++i) {
      if (keys[i] < 0 || keys[i] >= extent) {
        return EqualCountCuts(KeyComponents(space, dim), extent, parts);
      }
      ++count[static_cast<size_t>(keys[i])];
    }
  }
  return CutsFromCounts(count, parts);
}

// Counting sort of the positions by block, positions increasing inside each block, where
// block_ids(first, m, out) gives the blocks of positions [first, first + m). Two passes over the
// keys, a chunk at a time: the first counts each block's positions and runs of consecutive
// positions, so that the second stores the cheapest of the three forms (see Blocks): nothing when
// every block is a range (identity), the runs when they are at most half the positions, else
// the 8-byte positions. Nothing else of the size of the space is held.
template <typename BlockIds>
void FillBlocksByChunks(int64_t n, int num_blocks, BlockIds&& block_ids, Blocks* b) {
  b->offsets.assign(static_cast<size_t>(num_blocks) + 1, 0);
  b->positions.clear();
  b->run_begin.clear();
  b->run_index.clear();
  std::vector<int> ids(static_cast<size_t>(std::min(n, kKeyChunk)));
  // last[k]: the last position seen in block k (-2: none yet, so that position 0 starts a run).
  std::vector<int64_t> last(static_cast<size_t>(num_blocks), -2);
  std::vector<int64_t> block_runs(static_cast<size_t>(num_blocks), 0);
  bool ordered = true;  // block ids never decrease along the positions
  int last_id = 0;
  for (int64_t first = 0; first < n; first += kKeyChunk) {
    const int64_t m = std::min(kKeyChunk, n - first);
    block_ids(first, m, ids.data());
    for (int64_t i = 0; i < m; ++i) {
      const int k = ids[i];
      ++b->offsets[k + 1];
      if (last[k] + 1 != first + i) ++block_runs[k];
      last[k] = first + i;
      ordered = ordered && k >= last_id;
      last_id = k;
    }
  }
  for (int i = 0; i < num_blocks; ++i) b->offsets[i + 1] += b->offsets[i];
  b->identity = ordered;
  if (ordered) return;
  int64_t runs = 0;
  for (int64_t r : block_runs) runs += r;
  std::vector<int64_t> fill(b->offsets.begin(), b->offsets.end() - 1);
  if (2 * runs <= n) {
    std::vector<int64_t> next_run(static_cast<size_t>(num_blocks), 0);
    for (int k = 1; k < num_blocks; ++k) next_run[k] = next_run[k - 1] + block_runs[k - 1];
    b->run_begin.resize(static_cast<size_t>(runs));
    b->run_index.resize(static_cast<size_t>(runs) + 1);
    b->run_index.back() = n;
    std::fill(last.begin(), last.end(), -2);
    for (int64_t first = 0; first < n; first += kKeyChunk) {
      const int64_t m = std::min(kKeyChunk, n - first);
      block_ids(first, m, ids.data());
      for (int64_t i = 0; i < m; ++i) {
        const int k = ids[i];
        if (last[k] + 1 != first + i) {
          b->run_begin[next_run[k]] = first + i;
          b->run_index[next_run[k]++] = fill[k];
        }
        last[k] = first + i;
        ++fill[k];
      }
    }
    return;
  }
  b->positions.resize(static_cast<size_t>(n));
  for (int64_t first = 0; first < n; first += kKeyChunk) {
    const int64_t m = std::min(kKeyChunk, n - first);
    block_ids(first, m, ids.data());
    for (int64_t i = 0; i < m; ++i) b->positions[fill[ids[i]]++] = first + i;
  }
}

}  // namespace

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

void MarkContiguous(Blocks* b) {
  b->contiguous.assign(static_cast<size_t>(b->num_blocks()), 1);
  if (b->identity) return;
  for (int64_t blk = 0; blk < b->num_blocks(); ++blk) {
    if (b->runs()) {  // one run at most: the run starting at the block's first index, if any
      const int64_t first = b->offsets[blk];
      if (b->block_size(blk) == 0) continue;
      const auto r = std::lower_bound(b->run_index.begin(), b->run_index.end(), first);
      b->contiguous[blk] = *(r + 1) >= b->offsets[blk + 1];
      continue;
    }
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
      const std::vector<int64_t> cuts = grid.space_cuts != nullptr
                                            ? *grid.space_cuts
                                            : DimCuts(space, s.space_dim, grid.space_parts);
      std::vector<int64_t> keys(std::min<size_t>(n, kKeyChunk));
      FillBlocksByChunks(
          space.size(), grid.space_parts,
          [&](int64_t first, int64_t m, int* ids) {
            space.key_components(s.space_dim, first, m, keys.data());
            for (int64_t i = 0; i < m; ++i) ids[i] = BlockOf(cuts, keys[i]);
          },
          &b);
      break;
    }
    case LoopStrategy::k2D: {
      const std::vector<int64_t> scuts = grid.space_cuts != nullptr
                                             ? *grid.space_cuts
                                             : DimCuts(space, s.space_dim, grid.space_parts);
      const std::vector<int64_t> tcuts = grid.time_cuts != nullptr
                                             ? *grid.time_cuts
                                             : DimCuts(space, s.time_dim, grid.time_parts);
      std::vector<int64_t> sk(std::min<size_t>(n, kKeyChunk)), tk(sk.size());
      FillBlocksByChunks(
          space.size(), grid.space_parts * grid.time_parts,
          [&](int64_t first, int64_t m, int* ids) {
            space.key_components(s.space_dim, first, m, sk.data());
            space.key_components(s.time_dim, first, m, tk.data());
            for (int64_t i = 0; i < m; ++i) {
              ids[i] = BlockOf(scuts, sk[i]) * grid.time_parts + BlockOf(tcuts, tk[i]);
            }
          },
          &b);
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

const Blocks& BlockCache::Get(const LoopSchedule& s, const ArrayBase& space,
                              const std::vector<int64_t>& salt,
                              const std::function<Blocks()>& make) {
  constexpr size_t kMaxEntries = 64;
  // What MakeBlocks reads from the schedule: the strategy's way of cutting, and its dims or skew.
  std::vector<int64_t> key = {space.id(), static_cast<int64_t>(salt.size())};
  key.insert(key.end(), salt.begin(), salt.end());
  key.push_back(s.rank);
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
  const int64_t n = space.size();
  std::vector<int64_t> keys(static_cast<size_t>(std::min(n, kKeyChunk)));
  if (b->identity || b->runs()) {
    // Block by block, range by range (a chunk of keys at a time): nothing per position.
    for (int64_t blk = 0; blk < blocks; ++blk) {
      b->ForEachRange(blk, 0, b->block_size(blk), [&](int64_t lo, int64_t hi) {
        for (int64_t first = lo; first < hi; first += kKeyChunk) {
          const int64_t m = std::min(kKeyChunk, hi - first);
          for (int d = 0; d < rank; ++d) {
            space.key_components(d, first, m, keys.data());
            const size_t at = static_cast<size_t>(blk * rank + d);
            for (int64_t i = 0; i < m; ++i) {
              b->key_lo[at] = std::min(b->key_lo[at], keys[i]);
              b->key_hi[at] = std::max(b->key_hi[at], keys[i]);
            }
          }
        }
      });
    }
    return;
  }
  // Listed positions: chunk by chunk of storage positions, each position's block from an inverse
  // of the positions (4 bytes per position, not 8 per dim).
  std::vector<int> block_of(static_cast<size_t>(n));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    for (int64_t i = b->offsets[blk]; i < b->offsets[blk + 1]; ++i) {
      block_of[static_cast<size_t>(b->positions[i])] = static_cast<int>(blk);
    }
  }
  for (int d = 0; d < rank; ++d) {
    for (int64_t first = 0; first < n; first += kKeyChunk) {
      const int64_t m = std::min(kKeyChunk, n - first);
      space.key_components(d, first, m, keys.data());
      for (int64_t i = 0; i < m; ++i) {
        const int64_t at = block_of[static_cast<size_t>(first + i)] * rank + d;
        b->key_lo[at] = std::min(b->key_lo[at], keys[i]);
        b->key_hi[at] = std::max(b->key_hi[at], keys[i]);
      }
    }
  }
}

void RunBlockPart(const Blocks& b, int64_t block, int64_t from, int64_t to, const LoopTask& task) {
  if (to <= from) return;
  const int64_t begin = b.offsets[block] + from;
  if (b.contiguous[block]) {
    task.RunRange(b.position(begin), b.position(begin) + (to - from));
  } else if (b.runs()) {
    b.ForEachRange(block, from, to, [&task](int64_t lo, int64_t hi) { task.RunRange(lo, hi); });
  } else {
    task.RunPositions(b.positions.data() + begin, static_cast<size_t>(to - from));
  }
}

void RunBlock(const Blocks& b, int64_t block, const LoopTask& task) {
  RunBlockPart(b, block, 0, b.block_size(block), task);
}

}  // namespace tessera::internal
