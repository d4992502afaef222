// The programming model in serial mode: an MF-style program compiles and runs, and each piece
// (dense/sparse arrays, row views, relaxed tables, accumulators, parallel_for) behaves as its
// header says.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/tessera.h"

namespace tessera {
namespace {

ContextOptions Hermetic() {
  ContextOptions o;
  o.read_environment = false;
  return o;
}

TEST(DistArrayTest, DenseIsZeroInitializedAndWritable) {
  Context ctx(Hermetic());
  auto a = DistArray<int, 2>::dense(ctx, {3, 4});
  EXPECT_FALSE(a.is_sparse());
  EXPECT_EQ(a.size(), 12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(a(i, j), 0);
  a(1, 2) = 7;
  a.at(Key<2>{{2, 3}}) += 5;
  EXPECT_EQ(a(1, 2), 7);
  EXPECT_EQ(a.row(2)[3], 5);
  EXPECT_EQ(a.row(1).size(), 4);
  a.row(0)[1] = 9;
  EXPECT_EQ(a(0, 1), 9);
}

TEST(DistArrayTest, RandomIsDeterministicAndInRange) {
  Context ctx(Hermetic());
  auto a = DistArray<float, 2>::random(ctx, {50, 8}, 42, -0.5f, 0.5f);
  auto b = DistArray<float, 2>::random(ctx, {50, 8}, 42, -0.5f, 0.5f);
  auto c = DistArray<float, 2>::random(ctx, {50, 8}, 43, -0.5f, 0.5f);
  int differ = 0;
  for (int64_t i = 0; i < 50; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      EXPECT_EQ(a(i, j), b(i, j));
      EXPECT_GE(a(i, j), -0.5f);
      EXPECT_LT(a(i, j), 0.5f);
      differ += a(i, j) != c(i, j);
    }
  }
  EXPECT_GT(differ, 390);  // another seed gives other values
  auto ints = DistArray<int32_t, 1>::random(ctx, {1000}, 7, 0, 3);
  std::vector<int> seen(4, 0);
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_GE(ints(i), 0);
    ASSERT_LE(ints(i), 3);
    ++seen[ints(i)];
  }
  for (int s : seen) EXPECT_GT(s, 150);  // inclusive range, roughly uniform
}

TEST(DistArrayTest, SparseStoresInsertedElementsInOrder) {
  Context ctx(Hermetic());
  auto s = DistArray<double, 2>::sparse(ctx, {1000, 1000});
  EXPECT_TRUE(s.insert({{5, 7}}, 1.5));
  EXPECT_TRUE(s.insert({{1, 2}}, 2.5));
  EXPECT_FALSE(s.insert({{5, 7}}, 9.0));  // already stored: unchanged
  EXPECT_EQ(s.nnz(), 2);
  EXPECT_EQ(s(5, 7), 1.5);
  EXPECT_EQ(s.get({{3, 3}}), 0.0);  // get never inserts
  EXPECT_EQ(s.nnz(), 2);
  EXPECT_FALSE(s.contains({{3, 3}}));
  s(3, 3) = 4.0;  // operator() inserts
  EXPECT_EQ(s.nnz(), 3);
  std::vector<Key<2>> order;
  parallel_for(s, [&](const Key<2>& k, double& v) {
    order.push_back(k);
    v *= 2;
  });
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], (Key<2>{{5, 7}}));
  EXPECT_EQ(order[1], (Key<2>{{1, 2}}));
  EXPECT_EQ(order[2], (Key<2>{{3, 3}}));
  EXPECT_EQ(s(1, 2), 5.0);
  s.sort_keys();
  EXPECT_EQ(s.key_at(0), (Key<2>{{1, 2}}));
  EXPECT_EQ(s.key_at(2), (Key<2>{{5, 7}}));
  EXPECT_EQ(s(5, 7), 3.0);  // lookup still right after reordering
}

TEST(DistArrayTest, ShuffleKeepsElementsAndChangesOrder) {
  Context ctx(Hermetic());
  auto s = DistArray<int, 2>::sparse(ctx, {100, 100});
  for (int i = 0; i < 100; ++i) s.append_unchecked({{i, 99 - i}}, i);
  s.shuffle(3);
  int moved = 0;
  int64_t sum = 0;
  for (int64_t p = 0; p < s.size(); ++p) {
    moved += s.value_at(p) != p;
    EXPECT_EQ(s.key_at(p)[1], 99 - s.key_at(p)[0]);
    EXPECT_EQ(s.value_at(p), s.key_at(p)[0]);
    sum += s.value_at(p);
  }
  EXPECT_GT(moved, 50);
  EXPECT_EQ(sum, 99 * 100 / 2);
  EXPECT_EQ(s(10, 89), 10);
}

TEST(DistArrayTest, ShuffleBlocksGroupsElementsByBlock) {
  Context ctx(Hermetic());
  auto s = DistArray<int, 2>::sparse(ctx, {40, 30});
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 30; ++j)
      if ((i + j) % 3 == 0) s.append_unchecked({{i, j}}, i * 100 + j);
  const int64_t n = s.nnz();
  for (bool sorted : {false, true}) {
    SCOPED_TRACE(sorted);
    s.shuffle_blocks(11, {4, 3}, sorted);
    ASSERT_EQ(s.nnz(), n);
    // Each block (10 rows x 10 columns) is one contiguous run; 12 runs in all.
    std::set<std::pair<int64_t, int64_t>> finished;
    std::pair<int64_t, int64_t> current{-1, -1};
    std::vector<std::pair<int64_t, int64_t>> block_order;
    for (int64_t p = 0; p < n; ++p) {
      const Key<2>& k = s.key_at(p);
      EXPECT_EQ(s.value_at(p), k[0] * 100 + k[1]);  // values moved with their keys
      const std::pair<int64_t, int64_t> b{k[0] / 10, k[1] / 10};
      if (b != current) {
        EXPECT_TRUE(finished.insert(b).second) << "block revisited";
        block_order.push_back(b);
        current = b;
      } else if (sorted) {
        EXPECT_LT(s.key_at(p - 1).idx, k.idx);
      }
    }
    EXPECT_EQ(finished.size(), 12u);
    EXPECT_FALSE(std::is_sorted(block_order.begin(), block_order.end()));  // random block order
  }
  EXPECT_EQ(s(13, 2), 1302);
}

TEST(ParallelForTest, DenseVisitsEveryElementRowMajor) {
  Context ctx(Hermetic());
  auto a = DistArray<int64_t, 3>::dense(ctx, {2, 3, 4});
  int64_t next = 0;
  parallel_for(a, [&](const Key<3>& k, int64_t& v) {
    EXPECT_EQ(k[0] * 12 + k[1] * 4 + k[2], next);
    v = next++;
  });
  EXPECT_EQ(next, 24);
  EXPECT_EQ(a(1, 2, 3), 23);
  EXPECT_EQ(a(0, 1, 0), 4);
}

TEST(ParallelForTest, KeyOnlyBodyAndDataParallelPermission) {
  Context ctx(Hermetic());
  auto s = DistArray<float, 2>::sparse(ctx, {10, 10});
  for (int i = 0; i < 10; ++i) s.insert({{i, i}}, 1.0f);
  auto totals = RelaxedArray<int64_t, 1>::dense(ctx, {10}, /*staleness=*/2);
  EXPECT_EQ(totals.staleness(), 2);
  Accumulator<int64_t> count(ctx);
  parallel_for(s, [&](const Key<2>& k) {
    totals.add(k[0], 3);
    count += 1;
  }, DataParallel{.staleness = 2});
  EXPECT_EQ(count.value(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(totals(i), 3);
}

TEST(RelaxedArrayTest, RowViewReadsAndAdds) {
  Context ctx(Hermetic());
  auto t = RelaxedArray<double, 2>::dense(ctx, {4, 5});
  auto r = t.row(2);
  r.add(3, 1.25);
  r.add(3, 1.25);
  t.add(2, 4, -1.0);
  EXPECT_EQ(r[3], 2.5);
  EXPECT_EQ(t(2, 3), 2.5);
  EXPECT_EQ(t(2, 4), -1.0);
  EXPECT_EQ(t(0, 0), 0.0);
}

TEST(AccumulatorTest, SumsAcrossExecutorSlots) {
  Context ctx(Hermetic());
  Accumulator<double> acc(ctx, 1.0);
  acc += 2.0;
  {
    internal::ExecutorSlotScope scope(5);  // as a parallel executor's thread would
    acc += 4.0;
    EXPECT_EQ(internal::CurrentExecutorSlot(), 5);
  }
  EXPECT_EQ(internal::CurrentExecutorSlot(), 0);
  EXPECT_EQ(acc.value(), 7.0);
  acc.reset();
  EXPECT_EQ(acc.value(), 0.0);
}

// The MF program of docs/programming-model.md in miniature: SGD must fit a rank-2 matrix.
TEST(ProgrammingModelTest, MfStyleProgramRunsSeriallyAndConverges) {
  Context ctx(Hermetic());
  const int64_t users = 30, items = 20, k = 2;
  auto truth_u = DistArray<float, 2>::random(ctx, {users, k}, 1, 0.0f, 1.0f);
  auto truth_v = DistArray<float, 2>::random(ctx, {items, k}, 2, 0.0f, 1.0f);
  auto ratings = DistArray<float, 2>::sparse(ctx, {users, items});
  for (int64_t u = 0; u < users; ++u) {
    for (int64_t i = 0; i < items; ++i) {
      if ((u * 7 + i * 3) % 4 == 0) continue;  // leave some out
      ratings.insert({{u, i}}, truth_u(u, 0) * truth_v(i, 0) + truth_u(u, 1) * truth_v(i, 1));
    }
  }
  ratings.shuffle(5);
  auto W = DistArray<float, 2>::random(ctx, {users, k}, 3, 0.0f, 0.5f);
  auto H = DistArray<float, 2>::random(ctx, {items, k}, 4, 0.0f, 0.5f);
  double first_loss = -1, loss = 0;
  for (int epoch = 0; epoch < 300; ++epoch) {
    Accumulator<double> sq(ctx);
    parallel_for(ratings, [&](const Key<2>& key, float& rating) {
      auto w = W.row(key[0]);
      auto h = H.row(key[1]);
      float pred = 0;
      for (int j = 0; j < k; ++j) pred += w[j] * h[j];
      const float err = rating - pred;
      sq += static_cast<double>(err) * err;
      for (int j = 0; j < k; ++j) {
        const float wj = w[j];
        w[j] += 0.05f * err * h[j];
        h[j] += 0.05f * err * wj;
      }
    });
    loss = sq.value() / static_cast<double>(ratings.nnz());
    if (first_loss < 0) first_loss = loss;
  }
  EXPECT_LT(loss, first_loss * 0.01);
  EXPECT_LT(loss, 1e-3);
}

TEST(DistArrayTest, SparseRowViewListsARowsElements) {
  Context ctx(Hermetic());
  auto x = DistArray<float, 2>::sparse(ctx, {3, 10});
  x.insert({{2, 7}}, 1.0f);
  x.insert({{0, 3}}, 2.0f);
  x.insert({{2, 1}}, 3.0f);
  EXPECT_EQ(x.sparse_row(1).size(), 0);
  auto r2 = x.sparse_row(2);
  ASSERT_EQ(r2.size(), 2);
  EXPECT_EQ(r2.col(0), 7);  // storage order within the row
  EXPECT_EQ(r2.col(1), 1);
  for (auto [col, value] : x.sparse_row(2)) value += static_cast<float>(col);
  EXPECT_EQ(x(2, 7), 8.0f);
  EXPECT_EQ(x(2, 1), 4.0f);
  x.insert({{1, 0}}, 5.0f);  // a change regroups on the next call
  ASSERT_EQ(x.sparse_row(1).size(), 1);
  EXPECT_EQ(x.sparse_row(1).value(0), 5.0f);
}

TEST(DistArrayTest, SparseRowOfAHigherRankArrayListsItsElementsByKey) {
  Context ctx(Hermetic());
  auto t = DistArray<int64_t, 3>::sparse(ctx, {3, 4, 5});
  t.append_unchecked({{1, 3, 0}}, 10);
  t.append_unchecked({{0, 0, 4}}, 20);
  t.append_unchecked({{1, 0, 2}}, 30);
  t.append_unchecked({{2, 1, 1}}, 40);
  auto r1 = t.sparse_row(1);
  ASSERT_EQ(r1.size(), 2);
  EXPECT_EQ(r1.key(0), (Key<3>{{1, 3, 0}}));  // storage order within the row
  EXPECT_EQ(r1.key(1), (Key<3>{{1, 0, 2}}));
  for (auto [key, value] : t.sparse_row(1)) value += key[1] * 100 + key[2];
  EXPECT_EQ(t(1, 3, 0), 310);
  EXPECT_EQ(t(1, 0, 2), 32);
  EXPECT_EQ(t(0, 0, 4), 20);  // other rows untouched
  EXPECT_EQ(t.sparse_row(2).size(), 1);
  EXPECT_EQ(t.sparse_row(2).value(0), 40);
}

// Sparse logistic regression with the data-parallel permission, the third program the model must
// express: the space is the labels, each sample's features come from a sparse row of X.
TEST(ProgrammingModelTest, SparseLogisticRegressionRunsSerially) {
  Context ctx(Hermetic());
  const int64_t samples = 400, features = 50;
  auto truth = DistArray<float, 1>::random(ctx, {features}, 9, -1.0f, 1.0f);
  auto X = DistArray<float, 2>::sparse(ctx, {samples, features});
  auto y = DistArray<float, 1>::dense(ctx, {samples});
  uint64_t state = 17;
  for (int64_t i = 0; i < samples; ++i) {
    float margin = 0;
    for (int f = 0; f < 8; ++f) {
      const int64_t col = static_cast<int64_t>(internal::SplitMix64(state) % features);
      if (X.insert({{i, col}}, 1.0f)) margin += truth(col);
    }
    y(i) = margin > 0 ? 1.0f : 0.0f;
  }
  auto w = DistArray<float, 1>::dense(ctx, {features});
  auto accuracy = [&] {
    Accumulator<int64_t> correct(ctx);
    parallel_for(y, [&](const Key<1>& key, float& label) {
      float margin = 0;
      for (auto [col, value] : X.sparse_row(key[0])) margin += value * w(col);
      correct += (margin > 0) == (label > 0.5f);
    });
    return static_cast<double>(correct.value()) / samples;
  };
  const double before = accuracy();
  for (int epoch = 0; epoch < 30; ++epoch) {
    parallel_for(y, [&](const Key<1>& key, float& label) {
      float margin = 0;
      for (auto [col, value] : X.sparse_row(key[0])) margin += value * w(col);
      const float g = 1.0f / (1.0f + std::exp(-margin)) - label;
      for (auto [col, value] : X.sparse_row(key[0])) w(col) -= 0.1f * g * value;
    }, DataParallel{.staleness = 1});
  }
  EXPECT_GT(accuracy(), 0.95);
  EXPECT_GT(accuracy(), before + 0.2);
}

TEST(ParallelForDeathTest, NestedLoopIsRejected) {
  Context ctx(Hermetic());
  auto a = DistArray<int, 1>::dense(ctx, {2});
  EXPECT_DEATH(parallel_for(a, [&](const Key<1>&, int&) { parallel_for(a, [](const Key<1>&) {}); }),
               "inside a parallel_for");
}

TEST(DistArrayDeathTest, OutOfRangeAccessAborts) {
  Context ctx(Hermetic());
  auto a = DistArray<int, 2>::dense(ctx, {2, 2});
  EXPECT_DEATH(a(2, 0) = 1, "out of range");
  EXPECT_DEATH(a.row(-1), "out of range");
}

// Lookups from several threads at once build the index once and find every key; an insert from
// a thread that shares its loop with others aborts instead of corrupting the array.
TEST(DistArrayTest, SparseLookupsFromSeveralThreadsAtOnce) {
  Context ctx(Hermetic());
  auto s = DistArray<int64_t, 2>::sparse(ctx, {300, 40});
  for (int64_t i = 0; i < 300; ++i) s.append_unchecked({{i, (i * 7) % 40}}, i);
  s.shuffle(3);  // the index is built on first use after this
  std::vector<int64_t> found(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&s, &found, t] {
      internal::ExecutorSlotScope slot(t + 1);
      for (int64_t i = 0; i < 300; ++i) {
        if (const int64_t* v = s.find({{i, (i * 7) % 40}}); v != nullptr && *v == i) ++found[t];
        found[t] += s.get({{i, (i * 7 + 1) % 40}});  // not stored: 0, nothing inserted
        s(i, (i * 7) % 40) += 0;                       // stored: found, not inserted
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(found, std::vector<int64_t>(4, 300));
  EXPECT_EQ(s.nnz(), 300);
}

TEST(DistArrayDeathTest, InsertFromAConcurrentExecutorThreadAborts) {
  Context ctx(Hermetic());
  auto s = DistArray<int64_t, 1>::sparse(ctx, {10});
  s.insert({{1}}, 1);
  EXPECT_DEATH(
      {
        internal::ExecutorSlotScope slot(1, /*shared=*/true);
        s(2) = 5;
      },
      "inserted an element into a sparse DistArray");
  internal::ExecutorSlotScope alone(1, /*shared=*/false);
  s(3) = 5;  // the only executor thread: inserting is as safe as in serial code
  EXPECT_EQ(s.nnz(), 2);
}

}  // namespace
}  // namespace tessera
