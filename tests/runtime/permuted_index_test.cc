// Writes at a permutation of the loop's key (internal/permuted_index.h): the O(1) map and its
// fallback to the keyed lookup.
#include "tessera/internal/permuted_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "tessera/tessera.h"

namespace tessera {
namespace {

ContextOptions Hermetic() {
  ContextOptions o;
  o.read_environment = false;
  return o;
}

// A corpus-like set of keys (a, b, j): per a, some b's, j counting within a.
std::vector<Key<3>> Keys(uint64_t seed, int64_t rows, int64_t cols) {
  std::mt19937_64 rng(seed);
  std::vector<Key<3>> keys;
  for (int64_t a = 0; a < rows; ++a) {
    int64_t j = 0;
    for (int64_t b = 0; b < cols; ++b) {
      const int64_t n = static_cast<int64_t>(rng() % 3);
      for (int64_t o = 0; o < n; ++o) keys.push_back({{a, b, j++}});
    }
  }
  return keys;
}

// Both orders of one key set, each sorted by its own keys.
struct Orders {
  DistArray<int64_t, 3> x;  // keyed (a, b, j)
  DistArray<int64_t, 3> y;  // keyed (b, a, j)
};

Orders MakeOrders(Context& ctx, const std::vector<Key<3>>& keys, int64_t rows, int64_t cols,
                  int64_t len) {
  Orders o{DistArray<int64_t, 3>::sparse(ctx, {rows, cols, len}),
           DistArray<int64_t, 3>::sparse(ctx, {cols, rows, len})};
  std::vector<Key<3>> swapped;
  for (const Key<3>& k : keys) {
    o.x.append_unchecked(k, 0);
    swapped.push_back({{k[1], k[0], k[2]}});
  }
  std::sort(swapped.begin(), swapped.end(),
            [](const Key<3>& a, const Key<3>& b) { return a.idx < b.idx; });
  for (const Key<3>& k : swapped) o.y.append_unchecked(k, -1);
  return o;
}

int64_t ValueOf(const Key<3>& k) { return k[0] * 1000003 + k[1] * 1009 + k[2]; }

TEST(PermutedWritesTest, LoopWritesEveryElementOfTheOtherOrder) {
  Context ctx(Hermetic());
  const auto keys = Keys(1, 40, 30);
  Orders o = MakeOrders(ctx, keys, 40, 30, 64);
  parallel_for(o.x, [&](const Key<3>& key, int64_t&) {
    o.y(key[1], key[0], key[2]) = ValueOf(key);
  });
  ASSERT_EQ(o.y.nnz(), static_cast<int64_t>(keys.size()));  // nothing inserted
  for (int64_t q = 0; q < o.y.nnz(); ++q) {
    const Key<3>& k = o.y.key_at(q);
    EXPECT_EQ(o.y.value_at(q), ValueOf({{k[1], k[0], k[2]}}));
  }
  // And back, through find() in the other direction.
  parallel_for(o.y, [&](const Key<3>& key, int64_t& v) { *o.x.find({{key[1], key[0], key[2]}}) = v; });
  for (int64_t p = 0; p < o.x.nnz(); ++p) EXPECT_EQ(o.x.value_at(p), ValueOf(o.x.key_at(p)));
}

TEST(PermutedWritesTest, ElementsNotWrittenKeepTheirValues) {
  Context ctx(Hermetic());
  const auto keys = Keys(2, 30, 20);
  Orders o = MakeOrders(ctx, keys, 30, 20, 64);
  parallel_for(o.x, [&](const Key<3>& key, int64_t&) {
    if (key[0] % 3 == 1) o.y(key[1], key[0], key[2]) = ValueOf(key);
  });
  for (int64_t q = 0; q < o.y.nnz(); ++q) {
    const Key<3>& k = o.y.key_at(q);
    EXPECT_EQ(o.y.value_at(q), k[1] % 3 == 1 ? ValueOf({{k[1], k[0], k[2]}}) : -1);
  }
}

TEST(PermutedWritesTest, WritesAtOtherKeysFallBackToTheKeyedLookup) {
  Context ctx(Hermetic());
  const auto keys = Keys(3, 20, 20);
  Orders o = MakeOrders(ctx, keys, 21, 20, 64);
  // Not a permutation of the visited key: shifted rows, some not stored (inserted).
  parallel_for(o.x, [&](const Key<3>& key, int64_t&) { o.y(key[1], key[0] + 1, key[2]) += 1; });
  std::map<std::array<int64_t, 3>, int64_t> expect;
  for (const Key<3>& k : keys) expect[{k[1], k[0], k[2]}] = -1;
  for (const Key<3>& k : keys) {
    auto [it, fresh] = expect.try_emplace({k[1], k[0] + 1, k[2]}, 0);
    it->second += 1;
  }
  ASSERT_EQ(o.y.nnz(), static_cast<int64_t>(expect.size()));
  for (int64_t q = 0; q < o.y.nnz(); ++q) EXPECT_EQ(o.y.value_at(q), expect.at(o.y.key_at(q).idx));
}

TEST(PermutedWritesTest, ShuffledTargetStillGetsEveryWrite) {
  Context ctx(Hermetic());
  const auto keys = Keys(4, 30, 30);
  Orders o = MakeOrders(ctx, keys, 30, 30, 64);
  o.y.shuffle(9);  // rows no longer in the order the loop visits them: no map fits
  o.x.shuffle(5);
  parallel_for(o.x, [&](const Key<3>& key, int64_t&) {
    o.y(key[1], key[0], key[2]) = ValueOf(key);
  });
  ASSERT_EQ(o.y.nnz(), static_cast<int64_t>(keys.size()));
  for (int64_t q = 0; q < o.y.nnz(); ++q) {
    const Key<3>& k = o.y.key_at(q);
    EXPECT_EQ(o.y.value_at(q), ValueOf({{k[1], k[0], k[2]}}));
  }
}

TEST(PermutedWritesTest, MapIsExactForSortedOrdersAndRefusesOthers) {
  Context ctx(Hermetic());
  const auto keys = Keys(5, 25, 25);
  Orders o = MakeOrders(ctx, keys, 25, 25, 64);
  const int swap[3] = {1, 0, 2};
  std::vector<uint32_t> map;
  ASSERT_TRUE(internal::BuildPermutedMap(3, o.x.base(), o.y.base(), swap, &map));
  ASSERT_EQ(map.size(), keys.size());
  for (size_t p = 0; p < keys.size(); ++p) {
    const Key<3>& k = o.y.key_at(map[p]);
    EXPECT_EQ(k.idx, (std::array<int64_t, 3>{keys[p][1], keys[p][0], keys[p][2]}));
  }
  const int identity[3] = {0, 1, 2};
  EXPECT_FALSE(internal::BuildPermutedMap(3, o.x.base(), o.y.base(), identity, &map));
  EXPECT_TRUE(map.empty());
  // A target missing an element of the source.
  auto fewer = DistArray<int64_t, 3>::sparse(ctx, {25, 25, 64});
  for (int64_t q = 1; q < o.y.nnz(); ++q) fewer.append_unchecked(o.y.key_at(q), 0);
  EXPECT_FALSE(internal::BuildPermutedMap(3, o.x.base(), fewer.base(), swap, &map));
}

TEST(PermutedWritesTest, CandidatesListEveryPermutationThatFitsIdentityFirst) {
  const int64_t source[3] = {4, 4, 7}, key[3] = {4, 4, 7};
  const auto c = internal::CandidatePermutations(3, source, key, 8);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c[1], (std::vector<int>{1, 0, 2}));
  const int64_t other[3] = {5, 4, 7};
  EXPECT_TRUE(internal::CandidatePermutations(3, source, other, 8).empty());
}

TEST(PermutedWritesTest, AmbiguousFirstKeyStillFindsThePermutation) {
  Context ctx(Hermetic());
  // The first visited element has equal components (0, 0, 0): identity and swap both fit it.
  std::vector<Key<3>> keys{{{0, 0, 0}}, {{0, 2, 1}}, {{1, 0, 0}}, {{1, 1, 1}}, {{2, 1, 0}}};
  Orders o = MakeOrders(ctx, keys, 3, 3, 4);
  parallel_for(o.x, [&](const Key<3>& key, int64_t&) {
    o.y(key[1], key[0], key[2]) = ValueOf(key);
  });
  ASSERT_EQ(o.y.nnz(), 5);
  for (int64_t q = 0; q < o.y.nnz(); ++q) {
    const Key<3>& k = o.y.key_at(q);
    EXPECT_EQ(o.y.value_at(q), ValueOf({{k[1], k[0], k[2]}}));
  }
}

TEST(PermutedWritesTest, ThreadsShareOneMapBuiltOnce) {
  Context ctx(Hermetic());
  const auto keys = Keys(6, 60, 40);
  Orders o = MakeOrders(ctx, keys, 60, 40, 128);
  const int64_t n = o.x.nnz();
  // Four threads act as one loop's executor threads, each on a quarter of the positions.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto body = [&](const Key<3>& key, int64_t&) { o.y(key[1], key[0], key[2]) = ValueOf(key); };
      o.x.ForEachInRange(n * t / 4, n * (t + 1) / 4, body);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int64_t q = 0; q < o.y.nnz(); ++q) {
    const Key<3>& k = o.y.key_at(q);
    EXPECT_EQ(o.y.value_at(q), ValueOf({{k[1], k[0], k[2]}}));
  }
  EXPECT_EQ(internal::current_loop_position.space, nullptr);  // the loops' scopes are closed
}

}  // namespace
}  // namespace tessera
