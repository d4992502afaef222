// A 2-D wavefront recurrence (edit-distance style): A(i, j) depends on A(i-1, j) and A(i, j-1).
// Dependences (1, 0) and (0, 1) forbid 1D and the rotation (their direction matters); the
// hyperplane key[0] + key[1] carries both, so the skew [1 1; 0 1] gives legal wavefronts.
#include <algorithm>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<int64_t, 2>::filled(ctx, {32, 32}, 1);
  tessera::parallel_for(A, [&](const tessera::Key<2>& key, int64_t& a) {  // expected-remark {{parallel_for over 'A' unimodular wavefront (skew [1 1; 0 1]); 'A' servers}}
    const int64_t i = key[0];
    const int64_t j = key[1];
    if (i == 0 || j == 0) return;
    a = std::min(A(i - 1, j), A(i, j - 1)) + 1;
  });
}
// JSON: "strategy": "unimodular",
// JSON-NEXT: "space_dim": null,
// JSON-NEXT: "time_dim": null,
// JSON-NEXT: "skew": {{\[\[1, 1\], \[0, 1\]\]}},
