// Classic shapes with a parallel schedule (2D, 1D, stencil recurrence, wavefront, reduction),
// run with every executor and compared exactly with the serial run (differential.sh).
#include <tessera/tessera.h>

#include "checksum.h"

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  constexpr int64_t kUsers = 60, kItems = 50, kK = 3;
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {kUsers, kItems});
  for (int64_t u = 0; u < kUsers; ++u) {
    for (int64_t i = (u * 7) % 5; i < kItems; i += 3) ratings.insert({{u, i}}, static_cast<float>((u + i) % 4 + 1));
  }
  ratings.shuffle(7);
  auto W = tessera::DistArray<float, 2>::dense(ctx, {kUsers, kK});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {kItems, kK});
  // MF's access pattern (2D), with additive integer updates so any legal order gives one result.
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {
    auto w = W.row(key[0]);
    auto h = H.row(key[1]);
    for (int64_t f = 0; f < kK; ++f) {
      w[f] += r + static_cast<float>(f);
      h[f] += 1.0f;
    }
  });
  // A recurrence down key[0] (a stencil in place): its order must be kept; 1D over key[1].
  auto A = tessera::DistArray<int64_t, 2>::dense(ctx, {80, 20});
  tessera::parallel_for(A, [&](const tessera::Key<2>& key, int64_t& a) {
    a = key[0] == 0 ? key[1] + 1 : (A(key[0] - 1, key[1]) * 3 + key[0]) % 1000003;
  });
  // A wavefront: (1, 0) and (0, 1) dependences.
  auto G = tessera::DistArray<int64_t, 2>::dense(ctx, {40, 30});
  tessera::parallel_for(G, [&](const tessera::Key<2>& key, int64_t& g) {
    const int64_t up = key[0] > 0 ? G(key[0] - 1, key[1]) : 1;
    const int64_t left = key[1] > 0 ? G(key[0], key[1] - 1) : 1;
    g = (up + left) % 1000003;
  });
  // A coupled subscript: iterations on one anti-diagonal meet in C, in key order (a wavefront
  // along the dependence's ray).
  auto C = tessera::DistArray<int64_t, 1>::dense(ctx, {70});
  tessera::parallel_for(G, [&](const tessera::Key<2>& key, int64_t& g) {
    C(key[0] + key[1]) = (C(key[0] + key[1]) * 5 + g + key[0]) % 1000003;
  });
  // Rows scaled by their own sum (1D over key[0]), and an Accumulator.
  tessera::Accumulator<int64_t> total(ctx);
  auto sums = tessera::DistArray<float, 1>::dense(ctx, {kUsers});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {
    sums(key[0]) += r;
    total += static_cast<int64_t>(r);
  });
  difftest::Print("W", W);
  difftest::Print("H", H);
  difftest::Print("A", A);
  difftest::Print("G", G);
  difftest::Print("C", C);
  difftest::Print("sums", sums);
  difftest::PrintValue(ctx, "total", static_cast<long double>(total.value()));
}
