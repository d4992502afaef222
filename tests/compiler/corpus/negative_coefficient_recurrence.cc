// A recurrence with a negative coefficient: A(n - i, j) += A(n - i - 1, j). Solving
// -d0 = 1 gives the distance (-1, 0) (the loop walks A backwards): carried by key[0] only, so
// partitioning over key[1] is legal.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const int64_t n = 62;
  auto A = tessera::DistArray<int64_t, 2>::filled(ctx, {64, 16}, 1);
  auto space = tessera::DistArray<int8_t, 2>::dense(ctx, {62, 16});
  tessera::parallel_for(space, [&](const tessera::Key<2>& key, int8_t&) {  // expected-remark {{partitioned 1D (space: key[1]); 'space' local, 'A' local}}
    A(n - key[0], key[1]) += A(n - key[0] - 1, key[1]);
  });
}
// JSON: "vector": [-1, 0]
