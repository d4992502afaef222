#include "kernels.h"

#include <algorithm>
#include <array>
#include <thread>

namespace tessera::testing {
namespace {

constexpr int64_t kM = 1000003;  // keeps the recurrences' values small and exact

template <int N>
KernelRun Collect(const DistArray<int64_t, N>& values, const DistArray<int64_t, 2>& slots) {
  KernelRun run;
  const int64_t* v = values.data();
  run.values.assign(v, v + values.size());
  const int64_t* s = slots.data();
  run.slots.assign(s, s + slots.size());
  run.cols = {slots.extent(1)};
  return run;
}

DistArray<int64_t, 2> RandomSparse(Context& ctx, int64_t rows, int64_t cols, int64_t nnz,
                                   uint64_t seed) {
  auto r = DistArray<int64_t, 2>::sparse(ctx, {rows, cols});
  uint64_t state = seed;
  while (r.nnz() < nnz) {
    const auto i = static_cast<int64_t>(internal::SplitMix64(state) % static_cast<uint64_t>(rows));
    const auto j = static_cast<int64_t>(internal::SplitMix64(state) % static_cast<uint64_t>(cols));
    r.insert({{i, j}}, static_cast<int64_t>(internal::SplitMix64(state) % 100));
  }
  r.shuffle(seed + 1);  // position order != key order: blocks must keep position order
  return r;
}

}  // namespace

KernelRun RowScaling(Context& ctx, int64_t rows, int64_t cols) {
  auto A = DistArray<int64_t, 2>::random(ctx, {rows, cols}, 1, 0, 1000);
  auto scale = DistArray<int64_t, 1>::random(ctx, {rows}, 2, 1, 9);
  auto slot = DistArray<int64_t, 2>::filled(ctx, {rows, cols}, -1);
  parallel_for(A, [&](const Key<2>& key, int64_t& a) {
    a = a * scale(key[0]) + key[1];
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
  });
  return Collect(A, slot);
}

KernelRun ColumnRecurrence(Context& ctx, int64_t rows, int64_t cols) {
  auto A = DistArray<int64_t, 2>::random(ctx, {rows, cols}, 3, 0, 1000);
  auto slot = DistArray<int64_t, 2>::filled(ctx, {rows, cols}, -1);
  parallel_for(A, [&](const Key<2>& key, int64_t& a) {
    if (key[0] > 0) a = (3 * a + A(key[0] - 1, key[1])) % kM;
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
  });
  return Collect(A, slot);
}

KernelRun SparseRowFold(Context& ctx, int64_t rows, int64_t cols, int64_t nnz) {
  auto R = RandomSparse(ctx, rows, cols, nnz, 11);
  auto acc = DistArray<int64_t, 1>::random(ctx, {rows}, 4, 0, 1000);
  auto slot = DistArray<int64_t, 2>::filled(ctx, {rows, cols}, -1);
  parallel_for(R, [&](const Key<2>& key, int64_t& r) {
    acc(key[0]) = (31 * acc(key[0]) + r) % kM;
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
  });
  return Collect(acc, slot);
}

KernelRun SparseRowFoldReshuffled(Context& ctx, int64_t rows, int64_t cols, int64_t nnz,
                                  int epochs) {
  auto R = RandomSparse(ctx, rows, cols, nnz, 12);
  auto acc = DistArray<int64_t, 1>::random(ctx, {rows}, 4, 0, 1000);
  auto slot = DistArray<int64_t, 2>::filled(ctx, {rows, cols}, -1);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    parallel_for(R, [&](const Key<2>& key, int64_t& r) {
      acc(key[0]) = (31 * acc(key[0]) + r) % kM;
      slot(key[0], key[1]) = internal::CurrentExecutorSlot();
    });
    R.shuffle(100 + static_cast<uint64_t>(epoch));  // new positions for the same site and array
  }
  return Collect(acc, slot);
}

KernelRun MatrixUpdate2D(Context& ctx, int64_t rows, int64_t cols, int64_t nnz) {
  auto R = RandomSparse(ctx, rows, cols, nnz, 21);
  // Low bytes in [0, 256) are read, the updates add multiples of 256: reads never see another
  // iteration's update, so every order gives the same result, yet each update is a
  // read-modify-write that a concurrent one on the same row (column) would lose.
  auto A = DistArray<int64_t, 1>::random(ctx, {rows}, 5, 0, 255);
  auto B = DistArray<int64_t, 1>::random(ctx, {cols}, 6, 0, 255);
  auto totals = RelaxedArray<int64_t, 1>::dense(ctx, {4});
  auto slot = DistArray<int64_t, 2>::filled(ctx, {rows, cols}, -1);
  parallel_for(R, [&](const Key<2>& key, int64_t& r) {
    int64_t& a = A(key[0]);
    int64_t& b = B(key[1]);
    const int64_t a0 = a;
    const int64_t b0 = b;
    std::this_thread::yield();  // widen the read-write window a racing update would fall into
    a = a0 + ((b0 & 255) + r + 1) * 256;
    b = b0 + ((a0 & 255) * 3 + r + 1) * 256;
    totals.add(key[1] % 4, r + 1);
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
  });
  KernelRun run = Collect(A, slot);
  for (int64_t j = 0; j < cols; ++j) run.values.push_back(B(j));
  for (int64_t t = 0; t < 4; ++t) run.values.push_back(totals(t));
  return run;
}

KernelRun PermutedSweeps(Context& ctx, int64_t rows, int64_t cols, int rounds, bool shuffled) {
  constexpr int64_t kLen = 64;
  auto X = DistArray<int64_t, 3>::sparse(ctx, {rows, cols, kLen});
  uint64_t state = 31;
  for (int64_t a = 0; a < rows; ++a) {
    int64_t j = 0;
    for (int64_t b = 0; b < cols && j + 3 <= kLen; ++b) {
      const int64_t n = static_cast<int64_t>(internal::SplitMix64(state) % 4);
      for (int64_t o = 0; o < n; ++o, ++j) {
        X.append_unchecked({{a, b, j}}, (a * 7 + b) % 100);
      }
    }
  }
  // Shuffled, neither order visits the other's rows in their storage order: no position map,
  // every permuted write is a keyed lookup, the index built by whichever thread asks first.
  if (shuffled) X.shuffle(7);
  // The other order of the same keys: so tessc knows each sweep's permuted key is stored.
  auto Y = X.permuted({1, 0, 2});
  for (int round = 0; round < rounds; ++round) {
    parallel_for(X, [&](const Key<3>& key, int64_t& v) {
      int64_t row = 0;
      for (auto [k, value] : X.sparse_row(key[0])) row = (row * 31 + value + k[2]) % kM;
      Y(key[1], key[0], key[2]) = (row + v * 3 + key[2]) % kM;
    });
    parallel_for(Y, [&](const Key<3>& key, int64_t& v) {
      int64_t row = 0;
      for (auto [k, value] : Y.sparse_row(key[0])) row = (row * 17 + value + k[1]) % kM;
      X(key[1], key[0], key[2]) = (row + v * 5 + key[2]) % kM;
    });
  }
  KernelRun run;
  for (int64_t p = 0; p < X.nnz(); ++p) run.values.push_back(X.value_at(p));
  for (int64_t q = 0; q < Y.nnz(); ++q) run.values.push_back(Y.value_at(q));
  return run;
}

KernelRun Wavefront(Context& ctx, int64_t n) {
  auto A = DistArray<int64_t, 2>::random(ctx, {n, n}, 7, 0, 1000);
  auto slot = DistArray<int64_t, 2>::filled(ctx, {n, n}, -1);
  parallel_for(A, [&](const Key<2>& key, int64_t& a) {
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
    if (key[0] == 0 || key[1] == 0) return;
    const int64_t up = A(key[0] - 1, key[1]);
    std::this_thread::yield();  // slow enough that threads really overlap (and order mistakes show)
    a = (up + A(key[0], key[1] - 1) + a) % kM;
  });
  return Collect(A, slot);
}

KernelRun SkewedWavefront(Context& ctx, int64_t n) {
  auto A = DistArray<int64_t, 2>::random(ctx, {n, n}, 8, 0, 1000);
  auto slot = DistArray<int64_t, 2>::filled(ctx, {n, n}, -1);
  parallel_for(A, [&](const Key<2>& key, int64_t& a) {
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
    if (key[0] == 0 || key[1] == 0 || key[1] == n - 1) return;
    const int64_t up = A(key[0] - 1, key[1] + 1);
    std::this_thread::yield();
    a = (up + 2 * A(key[0], key[1] - 1)) % kM;
  });
  return Collect(A, slot);
}

KernelRun DataParallelSums(Context& ctx, int64_t samples, int64_t features, bool lock_free) {
  auto F = RandomSparse(ctx, samples, features, samples * features / 4, 31);
  auto sum = DistArray<int64_t, 1>::dense(ctx, {samples});
  auto hits = DistArray<int64_t, 1>::dense(ctx, {features});
  auto slot = DistArray<int64_t, 2>::filled(ctx, {samples, features}, -1);
  parallel_for(F, [&](const Key<2>& key, int64_t& v) {
    sum(key[0]) += v * (key[1] + 1);
    hits(v % features) += 1;  // subscript read from the data: any two samples may conflict
    slot(key[0], key[1]) = internal::CurrentExecutorSlot();
  }, DataParallel{.staleness = 1, .lock_free = lock_free});
  KernelRun run = Collect(sum, slot);
  // Lock-free threads may lose concurrent updates of hits; otherwise none is lost.
  if (!lock_free) {
    for (int64_t f = 0; f < features; ++f) run.values.push_back(hits(f));
  }
  return run;
}

KernelRun SharedTotal(Context& ctx, int64_t n) {
  auto A = DistArray<int64_t, 1>::random(ctx, {n}, 41, 0, 1000);
  int64_t total = 0;
  parallel_for(A, [&](const Key<1>& key, int64_t& a) { total += a; });
  KernelRun run;
  run.values = {total};
  return run;
}

}  // namespace tessera::testing
