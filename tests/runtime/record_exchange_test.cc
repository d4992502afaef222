// The pieces of partitioned sparse arrays that need no job (exchange/record_exchange.h,
// ArrayBase::ExportRecords/ImportRecords): cuts from counts, plans, moving elements between
// arrays, and keeping the serial order. The exchange between workers is tested end to end in
// tests/runtime_distributed/partitioned_data_test.cc.
#include "exchange/record_exchange.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/tessera.h"
#include "tests/support/capnp_payloads.h"

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

TEST(RecordExchangeTest, ImportMergesManyBatchesIntoSerialOrder) {
  // Batches as senders make them (each in serial order), interleaved in the serial order, plus
  // one out of order (a sender breaking the contract is still sorted).
  Context ctx;
  auto a = DistArray<double, 2>::sparse(ctx, {1000, 10});
  std::mt19937 rng(4);
  const int kBatches = 5;
  std::vector<RecordBatch> in(kBatches);
  const uint64_t n = 3000;
  for (uint64_t place = 0; place < n; ++place) {
    RecordBatch& b = in[rng() % kBatches];
    const int64_t key0 = static_cast<int64_t>(place / 10), key1 = static_cast<int64_t>(place % 10);
    b.keys.push_back(key0);
    b.keys.push_back(key1);
    const double v = static_cast<double>(place) + 0.25;
    const char* bytes = reinterpret_cast<const char*>(&v);
    b.values.insert(b.values.end(), bytes, bytes + sizeof(v));
    b.order.push_back({place % 7, place});  // high part first: the order is not file order
  }
  // The expected serial order: by (place % 7, place).
  std::vector<uint64_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  std::sort(expected.begin(), expected.end(),
            [](uint64_t x, uint64_t y) { return std::pair(x % 7, x) < std::pair(y % 7, y); });
  for (RecordBatch& b : in) {  // each batch sorted by its places, as a sender's storage is
    std::vector<size_t> idx(b.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&b](size_t x, size_t y) { return b.order[x] < b.order[y]; });
    RecordBatch sorted;
    for (size_t i : idx) {
      sorted.keys.insert(sorted.keys.end(), {b.keys[2 * i], b.keys[2 * i + 1]});
      sorted.values.insert(sorted.values.end(), b.values.begin() + i * 8,
                           b.values.begin() + i * 8 + 8);
      sorted.order.push_back(b.order[i]);
    }
    b = std::move(sorted);
  }
  std::reverse(in[2].keys.begin(), in[2].keys.end());  // pairs reversed: (item, user) ...
  for (size_t i = 0; i < in[2].size(); ++i) std::swap(in[2].keys[2 * i], in[2].keys[2 * i + 1]);
  std::reverse(in[2].order.begin(), in[2].order.end());
  for (size_t i = 0; i < in[2].size() / 2; ++i) {  // ... and values reversed with them
    std::swap_ranges(in[2].values.begin() + i * 8, in[2].values.begin() + i * 8 + 8,
                     in[2].values.end() - (i + 1) * 8);
  }
  RecordPartition part{0, 0, 1000, static_cast<int64_t>(n)};
  auto& base = const_cast<ArrayBase&>(a.base());
  base.ImportRecords(std::move(in), &part);
  ASSERT_EQ(base.size(), static_cast<int64_t>(n));
  for (uint64_t p = 0; p < n; ++p) {
    const uint64_t place = expected[p];
    ASSERT_EQ(base.key_component(static_cast<int64_t>(p), 0), static_cast<int64_t>(place / 10))
        << p;
    ASSERT_EQ(base.key_component(static_cast<int64_t>(p), 1), static_cast<int64_t>(place % 10))
        << p;
    double v;
    std::memcpy(&v, static_cast<const char*>(base.value_data()) + p * sizeof(double), sizeof(v));
    ASSERT_EQ(v, static_cast<double>(place) + 0.25) << p;
  }
}

// A share whose serial order is its keys' order stores no places (16 bytes per element): they
// are made from the keys wherever they are needed (exports, checkpoints), and become stored
// again when the order stops being the keys'.
TEST(RecordExchangeTest, AShareInKeyOrderStoresNoPlaces) {
  Context ctx;
  auto a = DistArray<double, 2>::sparse(ctx, {6, 4});
  auto& base = const_cast<ArrayBase&>(a.base());
  // Elements of rows [2, 5), arriving in file order (not key order), with file-order places.
  RecordBatch file;
  const std::vector<std::pair<int64_t, int64_t>> keys = {{4, 1}, {2, 3}, {3, 0}, {2, 0}, {4, 3}};
  for (size_t i = 0; i < keys.size(); ++i) {
    file.keys.push_back(keys[i].first);
    file.keys.push_back(keys[i].second);
    const double v = 0.5 + static_cast<double>(i);
    const char* bytes = reinterpret_cast<const char*>(&v);
    file.values.insert(file.values.end(), bytes, bytes + sizeof(double));
    file.order.push_back({0, i});
  }
  const RecordPartition part{0, 2, 5, 9};
  base.ImportRecords({file}, &part);
  ASSERT_NE(base.order_data(), nullptr);  // file order: the places are stored
  EXPECT_EQ(base.place_at(0).low, 0u);
  EXPECT_EQ(base.place_at(4).low, 4u);
  // sort_keys: the places become the keys' (0, linear index), and are no longer stored.
  a.sort_keys();
  EXPECT_EQ(base.order_data(), nullptr);
  const std::vector<int64_t> sorted = {2 * 4 + 0, 2 * 4 + 3, 3 * 4 + 0, 4 * 4 + 1, 4 * 4 + 3};
  for (size_t p = 0; p < sorted.size(); ++p) {
    EXPECT_EQ(base.key_component(static_cast<int64_t>(p), 0) * 4 +
                  base.key_component(static_cast<int64_t>(p), 1),
              sorted[p]);
    EXPECT_EQ(base.place_at(p).high, 0u);
    EXPECT_EQ(base.place_at(p).low, static_cast<uint64_t>(sorted[p])) << p;
  }
  // Exported, the elements carry those places; imported into another share in two batches in
  // the other order, they come back in key order, again without stored places.
  std::vector<RecordBatch> out(2);
  base.ExportRecords([](const int64_t* key) { return static_cast<size_t>(key[0] < 4); }, &out);
  ASSERT_EQ(out[0].size() + out[1].size(), sorted.size());
  for (const RecordBatch& b : out) {
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(b.order[i].low, static_cast<uint64_t>(b.keys[2 * i] * 4 + b.keys[2 * i + 1]));
    }
  }
  auto c = DistArray<double, 2>::sparse(ctx, {6, 4});
  auto& base_c = const_cast<ArrayBase&>(c.base());
  base_c.ImportRecords(std::move(out), &part);
  EXPECT_EQ(base_c.order_data(), nullptr);
  for (size_t p = 0; p < sorted.size(); ++p) {
    EXPECT_EQ(base_c.key_component(static_cast<int64_t>(p), 0) * 4 +
                  base_c.key_component(static_cast<int64_t>(p), 1),
              sorted[p]);
    EXPECT_EQ(base_c.place_at(p).low, static_cast<uint64_t>(sorted[p]));
  }
  // Blocks in another order (shuffle_blocks sorted within blocks): each place is its block's turn
  // and its key, computed from the key, so none is stored; the elements stand in that order.
  c.shuffle_blocks(5, {3, 1}, /*sort_within=*/true);
  EXPECT_EQ(base_c.order_data(), nullptr);
  std::vector<RecordOrder> places;
  for (size_t p = 0; p < sorted.size(); ++p) {
    places.push_back(base_c.place_at(p));
    const int64_t linear = base_c.key_component(static_cast<int64_t>(p), 0) * 4 +
                           base_c.key_component(static_cast<int64_t>(p), 1);
    EXPECT_EQ(places[p].low, static_cast<uint64_t>(linear));
    if (p > 0) EXPECT_LT(places[p - 1], places[p]) << p;
  }
  EXPECT_NE(places.front().high, places.back().high);  // three row blocks, in a shuffled order
  // Moved out and back (a relayout), the elements keep those places, still without storing them.
  std::vector<RecordBatch> moved(2);
  base_c.ExportRecords([](const int64_t* key) { return static_cast<size_t>(key[0] < 4); }, &moved);
  base_c.ImportRecords(std::move(moved), &part);
  EXPECT_EQ(base_c.order_data(), nullptr);
  for (size_t p = 0; p < sorted.size(); ++p) EXPECT_EQ(base_c.place_at(p), places[p]) << p;
}

TEST(RecordExchangeTest, BlocksInStorageOrderKeepNoPositions) {
  Context ctx;
  auto a = DistArray<float, 2>::sparse(ctx, {8, 4});
  for (int64_t u = 0; u < 8; ++u) a.insert(Key<2>{{u, u % 4}}, 1.0f);
  LoopSchedule s;
  s.strategy = LoopStrategy::kIndependent;
  s.rank = 2;
  s.space_dim = 0;
  // Sorted by user: each block is a run of consecutive positions, in order.
  Blocks sorted = MakeBlocks(s, a.base(), BlockGrid{.space_parts = 3});
  EXPECT_TRUE(sorted.identity);
  EXPECT_TRUE(sorted.positions.empty());
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(sorted.position(i), i);
  for (uint8_t c : sorted.contiguous) EXPECT_EQ(c, 1);
  // Shuffled: positions are kept.
  a.shuffle(3);
  Blocks shuffled = MakeBlocks(s, a.base(), BlockGrid{.space_parts = 3});
  EXPECT_FALSE(shuffled.identity);
  EXPECT_EQ(shuffled.positions.size(), 8u);
}

// What another worker sends is read within a bound (exchange/capnp_util.h, PeerPayloadOptions):
// garbage, a list larger than the payload and a payload that claims far more to walk than it
// holds are each a DataLoss, never an abort; a large legitimate payload reads.
TEST(RecordExchangeTest, APeersBadCountsAreDataLossAndLargeOnesRead) {
  const std::vector<uint64_t> local = {1, 2, 3};
  auto gather_with = [](std::string theirs) -> AllGatherFn {
    return [theirs](std::string mine) -> Result<std::vector<std::string>> {
      return std::vector<std::string>{std::move(mine), theirs};
    };
  };
  struct Case {
    std::string what, payload, says;
  };
  for (const Case& c :
       {Case{"garbage", std::string(64, '\xff'), "malformed key counts"},
        Case{"odd size", "not a capnp message", "not a Cap'n Proto message"},
        Case{"list past the end", testing::OversizedListPayload(1 << 20), "bounds"},
        Case{"amplified list", testing::AmplifiedListPayload(1 << 20), "traversal limit"}}) {
    auto got = AllGatherCounts(gather_with(c.payload), local);
    ASSERT_FALSE(got.ok()) << c.what;
    EXPECT_EQ(got.status().code(), StatusCode::kDataLoss) << c.what;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos)
        << c.what << ": " << got.status().ToString();
  }
  // Four million counts (32 MB) from each worker: within the bound.
  const std::vector<uint64_t> many(4 << 20, 7);
  auto same = [](std::string mine) -> Result<std::vector<std::string>> {
    return std::vector<std::string>{mine, mine};
  };
  auto got = AllGatherCounts(same, many);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ((*got)[1].size(), many.size());
  EXPECT_EQ((*got)[1].back(), 7u);
}

}  // namespace
}  // namespace tessera::internal
