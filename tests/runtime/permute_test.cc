// DistArray::permuted serially, and PermuteRecords (permute/permute_records.h) between W
// simulated workers (threads joined by an in-memory all-gather and all-to-all): the shares, in
// rank order, are exactly the serial result, whatever the rounds; a whole source is split without
// messages; a peer's malformed or misdirected elements are DataLoss. The job end to end is
// tests/runtime_distributed/partitioned_permute_test.cc.
#include <capnp/message.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "exchange/capnp_util.h"
#include "exchange/record_exchange.h"
#include "permute/permute_records.h"
#include "simulated_workers.h"
#include "tessera/internal/array_storage.h"
#include "tessera/proto/tessera.capnp.h"
#include "tessera/tessera.h"

namespace tessera::internal {
namespace {

template <int N>
using Elements = std::vector<std::pair<Key<N>, double>>;

// The elements of `a` in its storage order.
template <int N>
Elements<N> Stored(const DistArray<double, N>& a) {
  Elements<N> out;
  const auto& s = static_cast<const ArrayStorage<double, N>&>(a.base());
  for (size_t p = 0; p < s.keys_.size(); ++p) out.emplace_back(s.keys_[p], s.values_[p]);
  return out;
}

// The hand-built permutation: every element under `perm`, sorted by the new key.
template <int N>
Elements<N> Permuted(const Elements<N>& in, const std::array<int, static_cast<size_t>(N)>& perm) {
  Elements<N> out;
  for (const auto& [k, v] : in) {
    Key<N> nk;
    for (int d = 0; d < N; ++d) nk.idx[d] = k.idx[perm[d]];
    out.emplace_back(nk, v);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first.idx < b.first.idx; });
  return out;
}

TEST(PermuteTest, SerialResultIsTheHandBuiltPermutation) {
  Context ctx(Hermetic());
  auto x = RandomArray(ctx, {7, 11, 5}, 200, 1);
  const Elements<3> before = Stored(x);
  for (const std::array<int, 3>& perm :
       std::vector<std::array<int, 3>>{{1, 0, 2}, {2, 0, 1}, {0, 1, 2}, {2, 1, 0}}) {
    auto y = x.permuted(perm);
    ASSERT_TRUE(y.is_sparse());
    for (int d = 0; d < 3; ++d) EXPECT_EQ(y.extent(d), x.extent(perm[d]));
    EXPECT_EQ(Stored(y), Permuted(before, perm)) << perm[0] << perm[1] << perm[2];
    EXPECT_EQ(y.nnz(), x.nnz());
    // Keyed access works on the result (its index is built from the new layout).
    const auto [k, v] = Stored(y)[17];
    EXPECT_EQ(y.get(k), v);
  }
  EXPECT_EQ(Stored(x), before) << "the source is left as it is";
}

TEST(PermuteTest, ATransposedMatrixAndAnEmptyArray) {
  Context ctx(Hermetic());
  auto m = DistArray<double, 2>::sparse(ctx, {3, 4});
  m.insert({{2, 1}}, 1.5);
  m.insert({{0, 3}}, 2.5);
  m.insert({{1, 1}}, 3.5);
  m.insert({{0, 0}}, 4.5);
  auto t = m.permuted({1, 0});
  EXPECT_EQ(t.extent(0), 4);
  EXPECT_EQ(t.extent(1), 3);
  const Elements<2> want = {{{{0, 0}}, 4.5}, {{{1, 1}}, 3.5}, {{{1, 2}}, 1.5}, {{{3, 0}}, 2.5}};
  EXPECT_EQ(Stored(t), want);
  // Rows of the result, as a loop body reads them.
  int64_t in_row_1 = 0;
  for (auto [col, value] : t.sparse_row(1)) in_row_1 += col + static_cast<int64_t>(value);
  EXPECT_EQ(in_row_1, 1 + 3 + 2 + 1);

  auto empty = DistArray<double, 3>::sparse(ctx, {0, 4, 2});
  auto e = empty.permuted({2, 1, 0});
  EXPECT_EQ(e.nnz(), 0);
  EXPECT_EQ(e.extent(0), 2);
  EXPECT_EQ(e.extent(2), 0);
}

TEST(PermuteDeathTest, APermutationThatIsNotOneAbortsNamingIt) {
  Context ctx(Hermetic());
  auto x = RandomArray(ctx, {3, 3, 3}, 5, 2);
  EXPECT_DEATH(
      (void)x.permuted({0, 0, 2}),
      R"(DistArray::permuted\(\{0, 0, 2\}\) of a rank-3 array: perm must hold each of 0..2 exactly once)");
  EXPECT_DEATH((void)x.permuted({0, 1, 3}), R"(permuted\(\{0, 1, 3\}\))");
  EXPECT_DEATH((void)x.permuted({-1, 1, 2}), R"(permuted\(\{-1, 1, 2\}\))");
  auto dense = DistArray<double, 2>::dense(ctx, {2, 2});
  EXPECT_DEATH((void)dense.permuted({1, 0}), "sparse-only DistArray operation on a dense array");
}

// A RecordShipment of one rank-3 element of value 1.0: what a peer sends PermuteRecords.
std::string OneElement(const Key<3>& k) {
  capnp::MallocMessageBuilder message;
  auto records = message.initRoot<proto::RecordShipment>().initArrays(1)[0];
  auto keys = records.initKeys(3);
  for (unsigned d = 0; d < 3; ++d) keys.set(d, k.idx[d]);
  const double v = 1.0;
  records.setValues(kj::arrayPtr(reinterpret_cast<const kj::byte*>(&v), sizeof(v)));
  return FlattenMessage(message);
}

struct WorkerResult {
  Status status;
  PermuteReport report;
  Elements<3> stored;
  bool partitioned = false;
};

// Runs PermuteRecords on `n` workers, each holding the share `bounds` gives it of the array
// RandomArray(shape, count, seed) (or all of it, when bounds is empty).
std::vector<WorkerResult> RunWorkers(int n, std::array<int64_t, 3> shape, int count, unsigned seed,
                                     const std::vector<int64_t>& bounds, std::array<int, 3> perm,
                                     bool keep, size_t round, int* exchanges, int corrupt_from = -1,
                                     bool misdirect = false) {
  InMemoryMesh mesh(n);
  std::vector<WorkerResult> results(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Context ctx(Hermetic());
      auto source = RandomArray(ctx, shape, count, seed);
      if (!bounds.empty()) KeepShare(source, bounds, r);
      std::array<int64_t, 3> new_shape;
      for (int d = 0; d < 3; ++d) new_shape[d] = shape[perm[d]];
      auto result = DistArray<double, 3>::sparse(ctx, new_shape);
      PermuteOptions o;
      o.rank = r;
      o.num_workers = n;
      o.keep_partitioned = keep;
      o.round_elements = round;
      o.all_gather = [&mesh, r](std::string b) { return mesh.AllGather(r, std::move(b)); };
      o.all_to_all = [&, r](std::vector<std::string> to_each) {
        if (r == corrupt_from) {
          for (size_t w = 0; w < to_each.size(); ++w) {
            if (static_cast<int>(w) == r || to_each[w].empty()) continue;
            // A well-formed element outside the receiver's rows, or bytes that are no message.
            to_each[w] = misdirect ? OneElement({{new_shape[0] - 1, 0, 0}}) : std::string(24, 'x');
          }
        }
        return mesh.AllToAll(r, std::move(to_each));
      };
      Result<PermuteReport> rep =
          PermuteRecords(o, source.base(), std::vector<int>(perm.begin(), perm.end()),
                         &const_cast<ArrayBase&>(result.base()));
      WorkerResult& out = results[static_cast<size_t>(r)];
      out.status = rep.status();
      if (!rep.ok()) {
        mesh.Leave();
        return;
      }
      out.report = *rep;
      out.stored = Stored(result);
      out.partitioned = result.base().record_partition() != nullptr;
    });
  }
  for (std::thread& t : threads) t.join();
  *exchanges = mesh.exchanges();
  return results;
}

TEST(PermuteRecordsTest, SharesInRankOrderAreTheSerialResult) {
  const std::array<int64_t, 3> shape = {40, 9, 6};
  constexpr int kCount = 900;
  Context ctx(Hermetic());
  const Elements<3> all = Stored(RandomArray(ctx, shape, kCount, 7));
  for (const std::array<int, 3>& perm : std::vector<std::array<int, 3>>{{1, 0, 2}, {2, 1, 0}}) {
    const Elements<3> serial = Permuted(all, perm);
    for (int n : {2, 3, 4}) {
      for (size_t round : {size_t{1} << 18, size_t{13}}) {
        SCOPED_TRACE(std::to_string(n) + " workers, rounds of " + std::to_string(round) +
                     ", perm " + std::to_string(perm[0]) + std::to_string(perm[1]));
        // Uneven source shares; worker 1's is empty.
        std::vector<int64_t> bounds = {0, 10, 10};
        for (int w = 3; w <= n; ++w) bounds.push_back(10 + (w - 2) * 30 / (n - 1));
        bounds.back() = shape[0];
        int exchanges = 0;
        const auto results = RunWorkers(n, shape, kCount, 7, bounds, perm, true, round, &exchanges);
        Elements<3> joined;
        int64_t next = 0, held = 0;
        for (int r = 0; r < n; ++r) {
          const WorkerResult& w = results[static_cast<size_t>(r)];
          ASSERT_TRUE(w.status.ok()) << w.status.ToString();
          EXPECT_TRUE(w.partitioned);
          EXPECT_TRUE(w.report.partitioned);
          EXPECT_EQ(w.report.lo, next);
          next = w.report.hi;
          held += w.report.held;
          for (const auto& e : w.stored) {
            EXPECT_GE(e.first.idx[0], w.report.lo);
            EXPECT_LT(e.first.idx[0], w.report.hi);
          }
          joined.insert(joined.end(), w.stored.begin(), w.stored.end());
          EXPECT_GE(w.report.rounds, round == 13 ? kCount / 4 / 13 : 8);
        }
        EXPECT_EQ(next, shape[perm[0]]);
        EXPECT_EQ(held, kCount);
        EXPECT_EQ(joined, serial);
      }
    }
  }
}

TEST(PermuteRecordsTest, ANonKeptResultIsWholeOnEveryWorker) {
  const std::array<int64_t, 3> shape = {20, 8, 4};
  Context ctx(Hermetic());
  const Elements<3> serial = Permuted(Stored(RandomArray(ctx, shape, 300, 3)), {1, 0, 2});
  int exchanges = 0;
  const auto results =
      RunWorkers(3, shape, 300, 3, {0, 5, 12, 20}, {1, 0, 2}, false, 1 << 18, &exchanges);
  for (const WorkerResult& w : results) {
    ASSERT_TRUE(w.status.ok()) << w.status.ToString();
    EXPECT_FALSE(w.partitioned);
    EXPECT_EQ(w.stored, serial);
  }
}

TEST(PermuteRecordsTest, AWholeSourceIsSplitWithoutMessages) {
  const std::array<int64_t, 3> shape = {12, 3, 7};
  Context ctx(Hermetic());
  const Elements<3> serial = Permuted(Stored(RandomArray(ctx, shape, 150, 4)), {1, 2, 0});
  int exchanges = 0;
  const auto results = RunWorkers(4, shape, 150, 4, {}, {1, 2, 0}, true, 1 << 18, &exchanges);
  EXPECT_EQ(exchanges, 0);
  Elements<3> joined;
  int empty = 0;
  for (const WorkerResult& w : results) {
    ASSERT_TRUE(w.status.ok()) << w.status.ToString();
    EXPECT_TRUE(w.partitioned);
    EXPECT_EQ(w.report.rounds, 0);
    EXPECT_EQ(w.report.bytes_sent, 0u);
    empty += w.stored.empty();
    joined.insert(joined.end(), w.stored.begin(), w.stored.end());
  }
  EXPECT_GE(empty, 1) << "3 key values between 4 workers";
  EXPECT_EQ(joined, serial);
}

TEST(PermuteRecordsTest, APeersMalformedOrMisdirectedElementsAreDataLoss) {
  for (bool misdirect : {false, true}) {
    int exchanges = 0;
    const auto results = RunWorkers(2, {20, 8, 4}, 300, 3, {0, 10, 20}, {1, 0, 2}, true, 1 << 18,
                                    &exchanges, /*corrupt_from=*/1, misdirect);
    const Status& s = results[0].status;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    EXPECT_NE(
        s.message().find(misdirect ? "worker 1 sent a permuted element outside this worker's rows"
                                   : "permuted elements from worker 1"),
        std::string::npos)
        << s.ToString();
    // The sender learns that its peer gave up (in a job: the worker stops, naming the cause).
    EXPECT_FALSE(results[1].status.ok());
  }
}

}  // namespace
}  // namespace tessera::internal
