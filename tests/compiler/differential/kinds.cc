// The kinds of issue 20 in runnable form: each loop either keeps a parallel schedule that tessc
// can justify, or runs serially with a warning; either way the result is the serial one, which
// differential.sh checks under every executor. Values are integers, so sums are exact.
#include <functional>
#include <vector>

#include <tessera/tessera.h>

#include "checksum.h"

template <int D>
void Same(tessera::DistArray<float, 2>& R, tessera::DistArray<float, 1>& out) {
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& v) { out(k[0]) += v * D; });
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  constexpr int64_t kRows = 64, kCols = 48;
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {kRows, kCols});
  auto S = tessera::DistArray<float, 2>::sparse(ctx, {kRows, kCols});
  auto stats = tessera::DistArray<float, 2>::sparse(ctx, {kCols, 1});
  for (int64_t u = 0; u < kRows; ++u) {
    for (int64_t i = u % 3; i < kCols; i += 2) {
      R.insert({{u, i}}, static_cast<float>((u * i) % 5 + 1));
      S.insert({{u, i}}, 1.0f);
    }
  }
  for (int64_t i = 0; i < kCols; ++i) stats.insert({{i, 0}}, 0.0f);
  R.shuffle(3);
  auto H = tessera::DistArray<float, 2>::dense(ctx, {kCols, 4});
  auto out = tessera::DistArray<float, 1>::dense(ctx, {kRows});
  auto hits = tessera::DistArray<float, 1>::dense(ctx, {kCols});
  // find(): stats(key[1], 0).
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {
    if (float* s = stats.find({{k[1], 0}})) *s += r;
  });
  // sparse_row(key[0]).
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {
    for (auto [col, v] : S.sparse_row(k[0])) v += r;
  });
  // A pointer made before the loop: reads of H through it (nothing writes H here).
  float* Hb = H.data();
  for (int64_t p = 0; p < kCols * 4; ++p) Hb[p] = static_cast<float>(p % 7);
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { out(k[0]) += Hb[k[1] * 4]; });
  // Writes through it: the conflict makes tessc refuse this one, so it is not here; the row()
  // form is.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {
    auto h = H.row(k[1]);
    for (int64_t f = 0; f < 4; ++f) h[f] += r;
  });
  // std::function: serial with a warning.
  std::function<void(int64_t)> bump = [&](int64_t i) { hits(i) += 1; };
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float&) { bump(k[1]); });
  // A captured sum: serial with a warning.
  double sum = 0;
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { sum += r * static_cast<float>(k[0] + 1); });
  // A vector filled from the loop: serial (the serial order is the storage order).
  std::vector<int64_t> seen;
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float&) { seen.push_back(k[0] * kCols + k[1]); });
  long double order = 0;
  for (size_t i = 0; i < seen.size(); ++i) order += static_cast<long double>(seen[i]) * static_cast<long double>(i + 1);
  // Templates whose instantiations agree; a widening cast of a key component.
  Same<1>(R, out);
  Same<2>(R, out);
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { hits(static_cast<int64_t>(k[1])) += r; });
  // Two orders of one set of keys write each other at the permuted key. X is shuffled, so the
  // writes into Xt take the keyed lookup (its index built by the first thread to ask), and the
  // writes back the position map.
  auto X = tessera::DistArray<float, 2>::sparse(ctx, {kRows, kCols});
  for (int64_t u = 0; u < kRows; ++u) {
    for (int64_t i = (u + 1) % 4; i < kCols; i += 3) X.insert({{u, i}}, static_cast<float>(u % 7 + i % 3));
  }
  X.shuffle(5);
  auto Xt = X.permuted({1, 0});
  for (int round = 0; round < 2; ++round) {
    tessera::parallel_for(X, [&](const tessera::Key<2>& k, float& v) { Xt(k[1], k[0]) += v * 2; });
    tessera::parallel_for(Xt, [&](const tessera::Key<2>& k, float& v) { X.at({{k[1], k[0]}}) += v; });
  }
  // get at a key the loop does not own never inserts.
  auto digest = tessera::DistArray<float, 1>::dense(ctx, {kRows});
  tessera::parallel_for(X, [&](const tessera::Key<2>& k, float& v) {
    digest(k[0]) += v * static_cast<float>(k[1] + 1) + Xt.get({{(k[1] + 1) % kCols, k[0]}});
  });
  difftest::Print("digest", digest);
  difftest::Print("stats", stats);
  difftest::Print("S", S);
  difftest::Print("H", H);
  difftest::Print("out", out);
  difftest::Print("hits", hits);
  difftest::PrintValue(ctx, "sum", static_cast<long double>(sum));
  difftest::PrintValue(ctx, "order", order);
}
