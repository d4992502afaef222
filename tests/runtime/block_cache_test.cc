// BlockCache: sites that cut an array alike share one set of blocks, made once; another cut, salt
// or a change of the array's layout makes another.
#include <gtest/gtest.h>

#include "internal/loop_blocks.h"
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
    return cache.Get(s, space, salt, [&] {
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
  // A new element changes the layout: the blocks are remade and cover it.
  a.insert(Key<2>{{7, 4}}, 2.0f);
  const Blocks& fresh = get(Along(LoopStrategy::kIndependent, 0), 0);
  EXPECT_EQ(made, 5);
  EXPECT_TRUE(fresh.Matches(space));
  EXPECT_EQ(fresh.offsets.back(), a.nnz());
}

}  // namespace
}  // namespace tessera::internal
