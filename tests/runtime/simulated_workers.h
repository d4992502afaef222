// Helpers of the runtime's unit tests that run W simulated workers as threads of one process:
// an in-memory all-gather and all-to-all between them, random sparse arrays and a worker's share
// of one (permute_test.cc, assign_permuted_test.cc).
#ifndef TESSERA_TESTS_RUNTIME_SIMULATED_WORKERS_H_
#define TESSERA_TESTS_RUNTIME_SIMULATED_WORKERS_H_

#include <array>
#include <atomic>
#include <barrier>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tessera/internal/array_storage.h"
#include "tessera/tessera.h"

namespace tessera::internal {

// A Context that reads nothing from the environment.
inline ContextOptions Hermetic() {
  ContextOptions o;
  o.read_environment = false;
  return o;
}

// A sparse rank-3 array of `n` distinct random keys of shape {a, b, c}, stored in random order.
inline DistArray<double, 3> RandomArray(Context& ctx, std::array<int64_t, 3> shape, int n, unsigned seed) {
  std::mt19937 rng(seed);
  auto x = DistArray<double, 3>::sparse(ctx, shape);
  while (x.nnz() < n) {
    const Key<3> k{{static_cast<int64_t>(rng() % shape[0]), static_cast<int64_t>(rng() % shape[1]),
                    static_cast<int64_t>(rng() % shape[2])}};
    x.insert(k, static_cast<double>(rng() % 1000) / 8.0);
  }
  return x;
}

// All-to-all and all-gather among `n` threads in memory, any number of times. A worker that gives
// up calls Leave: every exchange after it is Unavailable (as a lost peer is in a job).
class InMemoryMesh {
 public:
  explicit InMemoryMesh(int n)
      : n_(n),
        sync_(n),
        box_(static_cast<size_t>(n), std::vector<std::string>(static_cast<size_t>(n))) {}
  Result<std::vector<std::string>> AllToAll(int rank, std::vector<std::string> to_each) {
    for (int w = 0; w < n_; ++w) {
      box_[static_cast<size_t>(w)][static_cast<size_t>(rank)] =
          std::move(to_each[static_cast<size_t>(w)]);
    }
    sync_.arrive_and_wait();
    if (left_) return Status::Unavailable("a peer left");
    std::vector<std::string> mine = box_[static_cast<size_t>(rank)];
    if (rank == 0) ++exchanges_;
    sync_.arrive_and_wait();
    return mine;
  }
  Result<std::vector<std::string>> AllGather(int rank, std::string bytes) {
    return AllToAll(rank, std::vector<std::string>(static_cast<size_t>(n_), bytes));
  }
  void Leave() {
    left_ = true;
    sync_.arrive_and_drop();
  }
  int exchanges() const { return exchanges_; }

 private:
  int n_;
  std::barrier<> sync_;
  std::vector<std::vector<std::string>> box_;
  std::atomic<bool> left_ = false;
  int exchanges_ = 0;
};

// Worker r's share of `whole` when it is partitioned on key[0] by `bounds`.
inline void KeepShare(DistArray<double, 3>& a, const std::vector<int64_t>& bounds, int r) {
  auto& s =
      const_cast<ArrayStorage<double, 3>&>(static_cast<const ArrayStorage<double, 3>&>(a.base()));
  a.sort_keys();
  const int64_t total = a.nnz();
  std::vector<Key<3>> keys;
  std::vector<double> values;
  for (size_t p = 0; p < s.keys_.size(); ++p) {
    if (s.keys_[p].idx[0] >= bounds[r] && s.keys_[p].idx[0] < bounds[r + 1]) {
      keys.push_back(s.keys_[p]);
      values.push_back(s.values_[p]);
    }
  }
  s.keys_ = keys;
  s.values_ = values;
  s.AdoptPartitionInKeyOrder({0, bounds[r], bounds[r + 1], total});
}

}  // namespace tessera::internal

#endif  // TESSERA_TESTS_RUNTIME_SIMULATED_WORKERS_H_
