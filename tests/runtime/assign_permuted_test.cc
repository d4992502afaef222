// DistArray::assign_permuted serially, and AssignPermuted (permute/assign_permuted.h) between W
// simulated workers (threads joined by an in-memory all-gather and all-to-all): every element
// takes its counterpart's value, in both directions, whatever the storage orders and rounds; a
// plan is made once and kept while the layouts stay, and made anew on every worker when any
// worker's layout changed; arrays that do not hold the same elements, and a peer's malformed
// message, are errors naming what is wrong. The job end to end is
// tests/runtime_distributed/partitioned_permute_test.cc ("assign" mode).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "permute/assign_permuted.h"
#include "simulated_workers.h"
#include "tessera/internal/array_storage.h"
#include "tessera/tessera.h"

namespace tessera::internal {
namespace {

template <typename T, int N>
ArrayStorage<T, N>& StorageOf(DistArray<T, N>& a) {
  return const_cast<ArrayStorage<T, N>&>(static_cast<const ArrayStorage<T, N>&>(a.base()));
}

Key<3> Apply(const Key<3>& k, const std::array<int, 3>& perm) {
  Key<3> out;
  for (int d = 0; d < 3; ++d) out.idx[d] = k.idx[perm[d]];
  return out;
}

// Gives every stored element of `a` a value of its own: f(key) + salt.
void Number(DistArray<double, 3>& a, double salt) {
  auto& s = StorageOf(a);
  for (size_t p = 0; p < s.keys_.size(); ++p) {
    const Key<3>& k = s.keys_[p];
    s.values_[p] = static_cast<double>(k.idx[0] * 10000 + k.idx[1] * 100 + k.idx[2]) + salt;
  }
}

// Every element of `to` holds the value of its counterpart in `from` (to key = from key under
// perm).
void ExpectCounterparts(DistArray<double, 3>& to, DistArray<double, 3>& from,
                        const std::array<int, 3>& perm) {
  std::map<std::array<int64_t, 3>, double> want;
  auto& f = StorageOf(from);
  for (size_t p = 0; p < f.keys_.size(); ++p) want[Apply(f.keys_[p], perm).idx] = f.values_[p];
  auto& t = StorageOf(to);
  ASSERT_EQ(t.keys_.size(), want.size());
  for (size_t p = 0; p < t.keys_.size(); ++p) {
    ASSERT_EQ(t.values_[p], want.at(t.keys_[p].idx)) << "position " << p;
  }
}

TEST(AssignPermutedTest, EveryElementTakesItsCounterpartsValueBothWays) {
  Context ctx(Hermetic());
  // Fewer elements than the copies prefetch ahead, and many more.
  for (const int n : {250, 5000}) {
    for (const std::array<int, 3>& perm :
         std::vector<std::array<int, 3>>{{1, 0, 2}, {2, 0, 1}, {0, 1, 2}, {2, 1, 0}}) {
      SCOPED_TRACE(n);
      std::array<int, 3> inverse;
      for (int d = 0; d < 3; ++d) inverse[perm[d]] = d;
      auto a = RandomArray(ctx, {17, 21, 25}, n, 3);  // stored in random order
      auto b = a.permuted(perm);                       // stored in key order
      Number(a, 0.5);
      b.assign_permuted(a, perm);
      ExpectCounterparts(b, a, perm);
      // Back, by the same plan (perm's inverse names the pair the other way round).
      Number(b, 0.25);
      a.assign_permuted(b, inverse);
      ExpectCounterparts(a, b, inverse);
      // And forth again.
      Number(a, 0.75);
      b.assign_permuted(a, perm);
      ExpectCounterparts(b, a, perm);
    }
  }
  EXPECT_EQ(ctx.traffic().permuted, 0u) << "a process alone sends nothing";
}

TEST(AssignPermutedTest, ANewLayoutOfEitherArrayIsFollowed) {
  Context ctx(Hermetic());
  auto a = RandomArray(ctx, {9, 6, 4}, 150, 5);
  auto b = a.permuted({2, 1, 0});
  Number(a, 0.5);
  b.assign_permuted(a, {2, 1, 0});
  ExpectCounterparts(b, a, {2, 1, 0});
  // Both reordered: the positions the plan held mean other elements now.
  a.sort_keys();
  b.shuffle(17);  // not in key order: looked up through a sorted index
  Number(a, 0.125);
  b.assign_permuted(a, {2, 1, 0});
  ExpectCounterparts(b, a, {2, 1, 0});
  Number(b, 0.375);
  a.assign_permuted(b, {2, 1, 0});
  ExpectCounterparts(a, b, {2, 1, 0});
}

TEST(AssignPermutedTest, OtherElementTypesAndAnEmptyPair) {
  Context ctx(Hermetic());
  auto m = DistArray<int32_t, 2>::sparse(ctx, {3, 4});
  m.insert({{2, 1}}, 21);
  m.insert({{0, 3}}, 3);
  m.insert({{1, 1}}, 11);
  auto t = m.permuted({1, 0});
  for (int64_t p = 0; p < t.nnz(); ++p) t.value_at(p) = 0;
  t.assign_permuted(m, {1, 0});
  EXPECT_EQ(t.get({{1, 2}}), 21);
  EXPECT_EQ(t.get({{3, 0}}), 3);
  EXPECT_EQ(t.get({{1, 1}}), 11);
  auto empty = DistArray<float, 2>::sparse(ctx, {0, 2});
  auto empty_t = empty.permuted({1, 0});
  empty_t.assign_permuted(empty, {1, 0});
  EXPECT_EQ(empty_t.nnz(), 0);
}

TEST(AssignPermutedDeathTest, ArraysThatDoNotMatchAbortNamingWhy) {
  Context ctx(Hermetic());
  auto a = RandomArray(ctx, {4, 5, 3}, 30, 9);
  auto b = a.permuted({1, 0, 2});
  EXPECT_DEATH(b.assign_permuted(a, {1, 1, 2}),
               R"(assign_permuted\(source, \{1, 1, 2\}\) of a rank-3 array of shape \(5, 4, 3\): perm must hold each of 0..2 exactly once)");
  EXPECT_DEATH(b.assign_permuted(a, {0, 1, 2}), R"(extent d must be the source's extent perm\[d\])");
  EXPECT_DEATH(b.assign_permuted(b, {0, 1, 2}), "cannot take its values from itself");
  // One more element in the assigned array, or in its source.
  auto c = a.permuted({1, 0, 2});
  Key<3> extra{{0, 0, 0}};
  while (c.contains(extra)) ++extra.idx[2];
  ASSERT_LT(extra.idx[2], 3);
  c.insert(extra, 1.0);
  EXPECT_DEATH(c.assign_permuted(a, {1, 0, 2}),
               R"(assigning permuted values: .*do not hold the same elements: array #[0-9]+ holds \(0, 0, [0-9]\), which no element of the other array permutes to)");
  EXPECT_DEATH(a.assign_permuted(c, {1, 0, 2}),
               R"(do not hold the same elements: array #[0-9]+'s element \(0, 0, [0-9]\) has no counterpart)");
  auto dense = DistArray<double, 3>::dense(ctx, {5, 4, 3});
  EXPECT_DEATH(dense.assign_permuted(a, {1, 0, 2}), "sparse-only DistArray operation on a dense array");
  EXPECT_DEATH(parallel_for(a, [&](const Key<3>&, double&) { b.assign_permuted(a, {1, 0, 2}); }),
               "assign_permuted inside a parallel_for body");
}

// W simulated workers, each holding its share of A (split on key[0] by a_bounds) and of B = A
// under perm (split on B's key[0] by b_bounds), both partitioned.
struct Shares {
  std::array<int64_t, 3> shape;
  int count;
  unsigned seed;
  std::array<int, 3> perm;
  std::vector<int64_t> a_bounds, b_bounds;
};

struct Worker {
  Status status;
  std::vector<AssignPermutedReport> reports;
};

// Runs `steps` on every worker: step(rank, a, b, plan, options) -> Status; a failing worker
// leaves the mesh (its peers then fail too, as in a job).
template <typename Step>
std::vector<Worker> RunWorkers(int n, const Shares& sh, size_t round, Step step) {
  InMemoryMesh mesh(n);
  std::vector<Worker> workers(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Context ctx(Hermetic());
      auto a = RandomArray(ctx, sh.shape, sh.count, sh.seed);
      auto b = a.permuted(sh.perm);
      KeepShare(a, sh.a_bounds, r);
      KeepShare(b, sh.b_bounds, r);
      AssignPermutedOptions o;
      o.rank = r;
      o.num_workers = n;
      o.round_elements = round;
      o.all_gather = [&mesh, r](std::string bytes) { return mesh.AllGather(r, std::move(bytes)); };
      o.all_to_all = [&mesh, r](std::vector<std::string> to_each) {
        return mesh.AllToAll(r, std::move(to_each));
      };
      PermutedValuesPlanPtr plan;
      Worker& w = workers[static_cast<size_t>(r)];
      w.status = step(r, a, b, plan, o, w.reports);
      if (!w.status.ok()) mesh.Leave();
    });
  }
  for (std::thread& t : threads) t.join();
  return workers;
}

// The value every element of the whole A gets from Number(a, salt), by key.
double Expected(const Key<3>& a_key, double salt) {
  return static_cast<double>(a_key.idx[0] * 10000 + a_key.idx[1] * 100 + a_key.idx[2]) + salt;
}

TEST(AssignPermutedWorkersTest, ValuesTravelToTheirCounterpartsHoldersByOnePlan) {
  for (int n : {2, 3, 4}) {
    for (size_t round : {size_t{5}, size_t{1} << 19}) {
      Shares sh{{30, 12, 4}, 500, 11, {1, 0, 2}, {}, {}};
      sh.a_bounds = {0, 9, 18, 30};
      sh.b_bounds = {0, 4, 5, 12};
      if (n == 2) sh.a_bounds = {0, 14, 30}, sh.b_bounds = {0, 7, 12};
      if (n == 4) sh.a_bounds = {0, 0, 10, 25, 30}, sh.b_bounds = {0, 3, 6, 9, 12};  // an empty share
      const std::array<int, 3> perm = sh.perm;
      auto workers = RunWorkers(n, sh, round, [&](int, DistArray<double, 3>& a, DistArray<double, 3>& b,
                                           PermutedValuesPlanPtr& plan,
                                           const AssignPermutedOptions& o,
                                           std::vector<AssignPermutedReport>& reports) -> Status {
        std::vector<int> p(perm.begin(), perm.end());
        for (int pass = 0; pass < 2; ++pass) {
          // A -> B: every held element of B takes A's value.
          Number(a, 0.5 + pass);
          auto& bs = StorageOf(b);
          for (double& v : bs.values_) v = -1;
          Result<AssignPermutedReport> r =
              AssignPermuted(o, const_cast<ArrayBase&>(a.base()), const_cast<ArrayBase&>(b.base()),
                             p, true, &plan);
          if (!r.ok()) return r.status();
          reports.push_back(*r);
          std::array<int, 3> inverse;
          for (int d = 0; d < 3; ++d) inverse[perm[d]] = d;
          for (size_t q = 0; q < bs.keys_.size(); ++q) {
            EXPECT_EQ(bs.values_[q], Expected(Apply(bs.keys_[q], inverse), 0.5 + pass));
          }
          // B -> A by the same plan.
          Number(b, 0.25 + pass);
          auto& as = StorageOf(a);
          for (double& v : as.values_) v = -1;
          r = AssignPermuted(o, const_cast<ArrayBase&>(a.base()), const_cast<ArrayBase&>(b.base()),
                             p, false, &plan);
          if (!r.ok()) return r.status();
          reports.push_back(*r);
          for (size_t q = 0; q < as.keys_.size(); ++q) {
            EXPECT_EQ(as.values_[q], Expected(Apply(as.keys_[q], perm), 0.25 + pass));
          }
        }
        return Status::Ok();
      });
      for (int r = 0; r < n; ++r) {
        const Worker& w = workers[static_cast<size_t>(r)];
        ASSERT_TRUE(w.status.ok()) << w.status.ToString();
        ASSERT_EQ(w.reports.size(), 4u);
        EXPECT_TRUE(w.reports[0].distributed);
        EXPECT_TRUE(w.reports[0].planned) << "the first call makes the plan";
        for (size_t c = 1; c < 4; ++c) EXPECT_FALSE(w.reports[c].planned) << "call " << c;
        // Values alone travel after the plan: fewer bytes than the call that also sent keys.
        EXPECT_LT(w.reports[2].bytes_sent, w.reports[0].bytes_sent) << "worker " << r;
        if (round == 5) {
          EXPECT_GT(w.reports[1].rounds, 8);
        }
      }
    }
  }
}

TEST(AssignPermutedWorkersTest, ALayoutChangeOnOneWorkerRemakesThePlanOnAll) {
  Shares sh{{20, 10, 3}, 300, 4, {1, 0, 2}, {0, 8, 20}, {0, 5, 10}};
  auto workers = RunWorkers(2, sh, 1u << 19, [&](int rank, DistArray<double, 3>& a,
                                           DistArray<double, 3>& b, PermutedValuesPlanPtr& plan,
                                           const AssignPermutedOptions& o,
                                           std::vector<AssignPermutedReport>& reports) -> Status {
    const std::vector<int> p{1, 0, 2};
    for (int call = 0; call < 3; ++call) {
      if (call == 2 && rank == 1) {
        // The same elements in the same places, but a new layout as far as the plan knows.
        std::vector<int64_t> same(static_cast<size_t>(StorageOf(b).keys_.size()));
        std::iota(same.begin(), same.end(), 0);
        StorageOf(b).Permute(same);
      }
      Number(a, call);
      Result<AssignPermutedReport> r =
          AssignPermuted(o, const_cast<ArrayBase&>(a.base()), const_cast<ArrayBase&>(b.base()), p,
                         true, &plan);
      if (!r.ok()) return r.status();
      reports.push_back(*r);
    }
    return Status::Ok();
  });
  for (const Worker& w : workers) {
    ASSERT_TRUE(w.status.ok()) << w.status.ToString();
    EXPECT_TRUE(w.reports[0].planned);
    EXPECT_FALSE(w.reports[1].planned);
    EXPECT_TRUE(w.reports[2].planned) << "every worker remakes the plan when any must";
  }
}

TEST(AssignPermutedWorkersTest, SharesThatDoNotMatchAreAnErrorNamingTheElement) {
  Shares sh{{20, 10, 3}, 300, 4, {1, 0, 2}, {0, 8, 20}, {0, 5, 10}};
  auto workers = RunWorkers(2, sh, 1u << 19, [&](int rank, DistArray<double, 3>& a,
                                           DistArray<double, 3>& b, PermutedValuesPlanPtr& plan,
                                           const AssignPermutedOptions& o,
                                           std::vector<AssignPermutedReport>&) -> Status {
    if (rank == 1) {
      // Worker 1's share of B loses its last element: the A element it came from, wherever it
      // is held, has no counterpart.
      auto& s = StorageOf(b);
      s.keys_.pop_back();
      s.values_.pop_back();
    }
    return AssignPermuted(o, const_cast<ArrayBase&>(a.base()), const_cast<ArrayBase&>(b.base()),
                          {1, 0, 2}, true, &plan)
        .status();
  });
  bool named = false;
  for (const Worker& w : workers) {
    ASSERT_FALSE(w.status.ok());
    named = named || w.status.message().find("has no counterpart in array") != std::string::npos;
  }
  EXPECT_TRUE(named) << workers[0].status.ToString() << " / " << workers[1].status.ToString();
}

TEST(AssignPermutedWorkersTest, AMalformedMessageIsDataLossNamingTheSender) {
  Shares sh{{20, 10, 3}, 300, 4, {1, 0, 2}, {0, 8, 20}, {0, 5, 10}};
  auto workers = RunWorkers(2, sh, 1u << 19, [&](int rank, DistArray<double, 3>& a,
                                           DistArray<double, 3>& b, PermutedValuesPlanPtr& plan,
                                           AssignPermutedOptions o,
                                           std::vector<AssignPermutedReport>&) -> Status {
    const std::vector<int> p{1, 0, 2};
    Status s = AssignPermuted(o, const_cast<ArrayBase&>(a.base()), const_cast<ArrayBase&>(b.base()),
                              p, true, &plan)
                   .status();
    if (!s.ok()) return s;
    if (rank == 0) {
      // Worker 0's values arrive short: not the count of values the plan says.
      AllToAllFn real = o.all_to_all;
      o.all_to_all = [real](std::vector<std::string> to_each) {
        for (std::string& m : to_each) {
          if (!m.empty()) m = std::string(24, 'x');
        }
        return real(std::move(to_each));
      };
    }
    return AssignPermuted(o, const_cast<ArrayBase&>(a.base()), const_cast<ArrayBase&>(b.base()), p,
                          true, &plan)
        .status();
  });
  ASSERT_FALSE(workers[1].status.ok());
  EXPECT_EQ(workers[1].status.code(), StatusCode::kDataLoss) << workers[1].status.ToString();
  EXPECT_NE(workers[1].status.message().find("worker 0 sent 24 bytes"), std::string::npos)
      << workers[1].status.ToString();
}

}  // namespace
}  // namespace tessera::internal
