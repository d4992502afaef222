// The pieces of partitioned sparse arrays that need no job (internal/record_exchange.h,
// ArrayBase::ExportRecords/ImportRecords): cuts from counts, plans, moving elements between
// arrays, and keeping the serial order. The exchange between workers is tested end to end in
// tests/runtime_distributed/partitioned_data_test.cc.
#include "internal/record_exchange.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "internal/loop_blocks.h"
#include "tessera/tessera.h"

namespace tessera::internal {
namespace {

TEST(RecordExchangeTest, CutsFromCountsAreThoseOfTheValues) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t extent = 1 + static_cast<int64_t>(rng() % 40);
    std::vector<int64_t> values(rng() % 200);
    std::vector<uint64_t> counts(static_cast<size_t>(extent), 0);
    for (int64_t& v : values) {
      v = static_cast<int64_t>(rng() % static_cast<uint64_t>(extent));
      ++counts[static_cast<size_t>(v)];
    }
    for (int parts : {1, 2, 3, 7}) {
      EXPECT_EQ(CutsFromCounts(counts, parts), EqualCountCuts(values, extent, parts))
          << "trial " << trial << " parts " << parts;
    }
  }
}

TEST(RecordExchangeTest, APlanGivesEachWorkerItsBlocks) {
  // 4 workers x 2 blocks each: worker w holds blocks 2w and 2w + 1, i.e. [cuts[2w-1], cuts[2w+1]).
  const std::vector<int64_t> cuts = {2, 3, 3, 5, 8, 9, 12};
  const RecordPlan plan = PlanFromCuts(1, 20, cuts, 2, 4, 100);
  EXPECT_EQ(plan.dim, 1);
  EXPECT_EQ(plan.bounds, (std::vector<int64_t>{0, 3, 5, 9, 20}));
  for (int64_t v = 0; v < 20; ++v) {
    const int worker = BlockOf(cuts, v) / 2;
    EXPECT_LE(plan.bounds[worker], v);
    EXPECT_LT(v, plan.bounds[worker + 1]);
  }
}

TEST(RecordExchangeTest, ElementsMoveBetweenArraysInSerialOrder) {
  Context ctx;
  auto a = DistArray<float, 2>::sparse(ctx, {6, 4});
  auto b = DistArray<float, 2>::sparse(ctx, {6, 4});
  for (int64_t u = 0; u < 6; ++u) {
    for (int64_t i = 0; i < 4; i += 1 + (u % 2))
      a.insert(Key<2>{{u, i}}, static_cast<float>(10 * u + i));
  }
  a.shuffle(9);  // positions no longer in key order
  std::vector<Key<2>> keys;
  for (int64_t p = 0; p < a.nnz(); ++p) keys.push_back(a.key_at(p));
  const int64_t n = a.nnz();
  auto& base_a = const_cast<ArrayBase&>(a.base());
  auto& base_b = const_cast<ArrayBase&>(b.base());
  // Split by user: users < 3 into batch 0, the others into batch 1.
  std::vector<RecordBatch> out(2);
  base_a.ExportRecords([](const int64_t* key) { return static_cast<size_t>(key[0] >= 3); }, &out);
  EXPECT_EQ(a.nnz(), 0);
  EXPECT_EQ(out[0].size() + out[1].size(), static_cast<size_t>(n));
  // b takes batch 1 then batch 0 (any order): the elements come back in their serial order.
  std::vector<RecordBatch> in;
  in.push_back(out[1]);
  in.push_back(out[0]);
  base_b.ImportRecords(std::move(in), nullptr);
  ASSERT_EQ(b.nnz(), n);
  for (int64_t p = 0; p < n; ++p) {
    EXPECT_EQ(b.key_at(p), keys[p]) << p;
    EXPECT_EQ(b.value_at(p), static_cast<float>(10 * keys[p][0] + keys[p][1]));
  }
  // Partitioned: nnz counts every worker's elements, and sort_keys reorders in place.
  RecordPartition part{0, 3, 6, n};
  std::vector<RecordBatch> mine;
  mine.push_back(out[1]);
  base_a.ImportRecords(std::move(mine), &part);
  EXPECT_EQ(a.nnz(), n);
  EXPECT_EQ(a.base().size(), static_cast<int64_t>(out[1].size()));
  ASSERT_NE(a.base().record_partition(), nullptr);
  a.sort_keys();
  for (int64_t p = 1; p < a.base().size(); ++p) {
    EXPECT_LT(a.base().key_component(p - 1, 0) * 4 + a.base().key_component(p - 1, 1),
              a.base().key_component(p, 0) * 4 + a.base().key_component(p, 1));
  }
}

}  // namespace
}  // namespace tessera::internal
