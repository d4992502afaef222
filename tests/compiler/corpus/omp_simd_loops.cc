// TESSC-ARGS: -fopenmp-simd
// The MF update with its inner loops under `#pragma omp simd` (as apps/mf does). With
// -fopenmp-simd Clang wraps each loop in a captured statement; tessc must walk into it, or it
// would miss every access to W and H.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 200});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 8});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {200, 8});
  const int k = 8;
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& rating) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    auto w = W.row(key[0]);
    auto h = H.row(key[1]);
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int j = 0; j < k; ++j) dot += w[j] * h[j];
    const float err = rating - dot;
#pragma omp simd
    for (int j = 0; j < k; ++j) {
      const float wj = w[j];
      w[j] = wj + 0.01f * err * h[j];
      h[j] = h[j] + 0.01f * err * wj;
    }
  });
}
// JSON: "name": "W",
// JSON: "mode": "write",
// JSON: "name": "H",
// JSON: "mode": "write",
