// A wavefront whose dependences are (1, -1) and (0, 1): A(i, j) reads A(i-1, j+1) and A(i, j-1).
// key[0] + key[1] does not carry (1, -1); the search finds 2*key[0] + key[1], completed to the
// unimodular matrix [2 1; 1 0].
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<int64_t, 2>::filled(ctx, {32, 32}, 1);
  tessera::parallel_for(A, [&](const tessera::Key<2>& key, int64_t& a) {  // expected-remark {{unimodular wavefront (skew [2 1; 1 0])}}
    if (key[0] == 0 || key[1] == 0 || key[1] == 31) return;
    a = A(key[0] - 1, key[1] + 1) + A(key[0], key[1] - 1);
  });
}
// JSON: "skew": {{\[\[2, 1\], \[1, 0\]\]}},
