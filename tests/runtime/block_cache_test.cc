// BlockCache: sites that cut an array alike share one set of blocks, made once; another cut, salt
// (compared whole) or a change of the array's layout makes another. MakeBlocks: chunked key
// reads cut as a sort; blocks held as runs of positions run every position once, as listed
// positions do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "schedule/loop_blocks.h"
#include "tessera/tessera.h"

namespace tessera::internal {
namespace {

LoopSchedule Along(LoopStrategy strategy, int space_dim, int time_dim = -1) {
  LoopSchedule s;
  s.strategy = strategy;
  s.rank = 2;
  s.space_dim = space_dim;
  s.time_dim = time_dim;
  return s;
}

TEST(BlockCacheTest, SitesThatCutAnArrayAlikeShareItsBlocks) {
  Context ctx;
  auto a = DistArray<float, 2>::sparse(ctx, {8, 5});
  for (int64_t u = 0; u < 8; ++u) {
    for (int64_t i = u % 2; i < 5; i += 2) a.insert(Key<2>{{u, i}}, 1.0f);
  }
  const ArrayBase& space = a.base();
  BlockCache cache;
  int made = 0;
  auto get = [&](const LoopSchedule& s, int64_t salt) -> const Blocks& {
    return cache.Get(s, space, salt == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{salt}, [&] {
      ++made;
      return MakeBlocks(s, space, {.space_parts = 2, .time_parts = 2});
    });
  };
  // Independent and 1d cut along the space dim alike.
  const Blocks& first = get(Along(LoopStrategy::kIndependent, 0), 0);
  const Blocks& again = get(Along(LoopStrategy::k1D, 0), 0);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(first.num_blocks(), 2);
  get(Along(LoopStrategy::kIndependent, 1), 0);  // another dim
  EXPECT_EQ(made, 2);
  get(Along(LoopStrategy::k2D, 0, 1), 0);  // another strategy
  EXPECT_EQ(made, 3);
  get(Along(LoopStrategy::kIndependent, 0), 7);  // another salt
  EXPECT_EQ(made, 4);
  get(Along(LoopStrategy::kIndependent, 0), 0);
  EXPECT_EQ(made, 4);
  // Salts are compared whole (a partitioned array's cuts): equal ones share, others do not.
  auto get_cut = [&](std::vector<int64_t> cuts) -> const Blocks& {
    return cache.Get(Along(LoopStrategy::k2D, 0, 1), space, cuts, [&] {
      ++made;
      return MakeBlocks(Along(LoopStrategy::k2D, 0, 1), space, {.space_parts = 2, .time_parts = 2});
    });
  };
  const Blocks& cut = get_cut({1, 4, 2});
  EXPECT_EQ(made, 5);
  EXPECT_EQ(&get_cut({1, 4, 2}), &cut);
  EXPECT_EQ(made, 5);
  get_cut({1, 4, 3});
  get_cut({1, 4});
  EXPECT_EQ(made, 7);
  // A new element changes the layout: the blocks are remade and cover it.
  a.insert(Key<2>{{7, 4}}, 2.0f);
  const Blocks& fresh = get(Along(LoopStrategy::kIndependent, 0), 0);
  EXPECT_EQ(made, 8);
  EXPECT_TRUE(fresh.Matches(space));
  EXPECT_EQ(fresh.offsets.back(), a.nnz());
}

// MakeBlocks reads keys a chunk at a time: on a space several chunks long, its blocks and key
// bounds are those of a plain counting sort over every key, for 1d and 2d cuts, for a shuffled
// space (positions listed) and a sorted one (blocks are ranges, no positions kept).
TEST(MakeBlocksTest, ChunkedCutsMatchACountingSortOfEveryKey) {
  constexpr int64_t kRows = 400, kCols = 300;
  for (bool sorted : {false, true}) {
    Context ctx;
    auto a = DistArray<float, 2>::sparse(ctx, {kRows, kCols});
    for (int64_t u = 0; u < kRows; ++u) {
      for (int64_t i = (u * 7) % 3; i < kCols; i += 1 + (u % 2)) a.insert(Key<2>{{u, i}}, 1.0f);
    }
    if (!sorted) a.shuffle(5);
    const ArrayBase& space = a.base();
    ASSERT_GT(space.size(), 2 * 32768);  // several chunks
    for (const LoopSchedule& s : {Along(LoopStrategy::k1D, 0), Along(LoopStrategy::k2D, 0, 1)}) {
      const BlockGrid grid{.space_parts = 3, .time_parts = 5};
      Blocks b = MakeBlocks(s, space, grid);
      ComputeKeyBounds(space, &b);
      const std::vector<int64_t> sk = KeyComponents(space, 0), tk = KeyComponents(space, 1);
      const std::vector<int64_t> scuts = EqualCountCuts(sk, kRows, grid.space_parts);
      const std::vector<int64_t> tcuts = EqualCountCuts(tk, kCols, grid.time_parts);
      const bool two_d = s.strategy == LoopStrategy::k2D;
      const int blocks = grid.space_parts * (two_d ? grid.time_parts : 1);
      std::vector<std::vector<int64_t>> want(blocks);
      for (int64_t p = 0; p < space.size(); ++p) {
        const int blk = two_d ? BlockOf(scuts, sk[p]) * grid.time_parts + BlockOf(tcuts, tk[p])
                              : BlockOf(scuts, sk[p]);
        want[blk].push_back(p);
      }
      ASSERT_EQ(b.num_blocks(), blocks);
      EXPECT_EQ(b.identity, sorted && !two_d);
      for (int blk = 0; blk < blocks; ++blk) {
        ASSERT_EQ(b.block_size(blk), static_cast<int64_t>(want[blk].size())) << blk;
        int64_t lo[2] = {INT64_MAX, INT64_MAX}, hi[2] = {INT64_MIN, INT64_MIN};
        for (size_t i = 0; i < want[blk].size(); ++i) {
          const int64_t p = want[blk][i];
          ASSERT_EQ(b.position(b.offsets[blk] + static_cast<int64_t>(i)), p) << blk;
          lo[0] = std::min(lo[0], sk[p]);
          hi[0] = std::max(hi[0], sk[p]);
          lo[1] = std::min(lo[1], tk[p]);
          hi[1] = std::max(hi[1], tk[p]);
        }
        for (int d = 0; d < 2; ++d) {
          EXPECT_EQ(b.key_lo[blk * 2 + d], lo[d]) << blk << " dim " << d;
          EXPECT_EQ(b.key_hi[blk * 2 + d], hi[d]) << blk << " dim " << d;
        }
      }
    }
  }
}

// What RunBlockPart runs of block `blk` when the block is cut into `pieces` index slices (as a
// data-parallel loop's clocks cut it), in the order it runs them; `ranges` counts the RunRange
// calls.
std::vector<int64_t> RunInPieces(const Blocks& b, int64_t blk, int pieces, int64_t* ranges) {
  std::vector<int64_t> ran;
  auto range = [&](int64_t lo, int64_t hi) {
    ++*ranges;
    for (int64_t p = lo; p < hi; ++p) ran.push_back(p);
  };
  auto list = [&](const int64_t* p, size_t n) { ran.insert(ran.end(), p, p + n); };
  const LoopTask task(range, list);
  const int64_t n = b.block_size(blk);
  for (int k = 0; k < pieces; ++k) RunBlockPart(b, blk, n * k / pieces, n * (k + 1) / pieces, task);
  return ran;
}

// Every strategy's blocks, cut as the distributed executor cuts them for 2 to 4 workers, on a
// space in key order (identity or runs) and shuffled (runs or a list): RunBlockPart over slices
// of each block runs exactly the block's positions, in increasing order (unimodular: in the
// blocks' order), and over all blocks every position exactly once; ForEachRange and position()
// agree with it; a 2d cut of the sorted space is held as runs, one per row and time block at
// most, not as one position per element.
TEST(MakeBlocksTest, EveryStrategyRunsEachPositionOnceFromRunsOrAList) {
  constexpr int64_t kRows = 300, kCols = 200;
  LoopSchedule skewed = Along(LoopStrategy::kUnimodular, -1);
  skewed.skew = {{1, 1}, {0, 1}};
  const std::vector<LoopSchedule> schedules = {
      Along(LoopStrategy::kIndependent, 0),  Along(LoopStrategy::k1D, 1),
      Along(LoopStrategy::kDataParallel, 0), Along(LoopStrategy::k2D, 0, 1),
      Along(LoopStrategy::k2D, 1, 0),        skewed};
  for (bool sorted : {true, false}) {
    Context ctx;
    auto a = DistArray<float, 2>::sparse(ctx, {kRows, kCols});
    for (int64_t u = 0; u < kRows; ++u) {
      for (int64_t i = (u * 5) % 4; i < kCols; i += 1 + (u % 3)) a.insert(Key<2>{{u, i}}, 1.0f);
    }
    if (!sorted) a.shuffle(11);
    const ArrayBase& space = a.base();
    const int64_t n = space.size();
    for (int workers = 2; workers <= 4; ++workers) {
      for (const LoopSchedule& s : schedules) {
        SCOPED_TRACE(::testing::Message() << "sorted " << sorted << ", " << workers
                                          << " workers, strategy " << static_cast<int>(s.strategy)
                                          << " dims " << s.space_dim << "/" << s.time_dim);
        const BlockGrid grid{.space_parts = workers,
                             .time_parts = 2 * workers,
                             .wave_parts = workers,
                             .exact_wave_parts = true};
        const Blocks b = MakeBlocks(s, space, grid);
        const bool two_d = s.strategy == LoopStrategy::k2D;
        if (sorted && two_d) {
          EXPECT_TRUE(b.runs());
          EXPECT_TRUE(b.positions.empty());
          EXPECT_LE(b.num_runs(), kRows * grid.time_parts);
        }
        if (!sorted && two_d) {
          EXPECT_FALSE(b.runs());  // shuffled over 8+ blocks: runs would cost more than a list
        }
        if (b.runs()) {
          EXPECT_LE(2 * b.num_runs(), n);
          EXPECT_TRUE(b.positions.empty());
        } else if (!b.identity) {
          EXPECT_EQ(static_cast<int64_t>(b.positions.size()), n);
        }
        std::vector<int> seen(static_cast<size_t>(n), 0);
        int64_t total = 0;
        for (int64_t blk = 0; blk < b.num_blocks(); ++blk) {
          int64_t ranges = 0;
          const std::vector<int64_t> ran = RunInPieces(b, blk, 3, &ranges);
          ASSERT_EQ(static_cast<int64_t>(ran.size()), b.block_size(blk)) << "block " << blk;
          std::vector<int64_t> by_range;
          int64_t maximal_ranges = 0;
          b.ForEachRange(blk, 0, b.block_size(blk), [&](int64_t lo, int64_t hi) {
            ASSERT_LT(lo, hi);
            ++maximal_ranges;
            for (int64_t p = lo; p < hi; ++p) by_range.push_back(p);
          });
          EXPECT_EQ(by_range, ran) << "block " << blk;
          for (size_t i = 0; i < ran.size(); ++i) {
            ASSERT_EQ(b.position(b.offsets[blk] + static_cast<int64_t>(i)), ran[i]);
            if (i > 0 && s.strategy != LoopStrategy::kUnimodular) {
              ASSERT_LT(ran[i - 1], ran[i]);
            }
            ASSERT_GE(ran[i], 0);
            ASSERT_LT(ran[i], n);
            ++seen[static_cast<size_t>(ran[i])];
          }
          if (b.runs() || b.identity) {
            // Ranges, not single positions: one per run, plus one per cut between pieces.
            EXPECT_LE(ranges, maximal_ranges + 2) << "block " << blk;
          }
          total += b.block_size(blk);
        }
        EXPECT_EQ(total, n);
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::internal
