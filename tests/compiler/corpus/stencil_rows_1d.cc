// A recurrence down the columns of a 2-D grid: A(i, j) += A(i-1, j). The dependence (1, 0) is
// carried by key[0] only, so partitioning over key[1] (columns) is legal: 1D with space key[1].
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<int64_t, 2>::filled(ctx, {64, 64}, 1);
  tessera::parallel_for(A, [&](const tessera::Key<2>& key, int64_t& a) {  // expected-remark {{partitioned 1D (space: key[1]); 'A' local}}
    if (key[0] > 0) a += A(key[0] - 1, key[1]);
  });
}
// JSON: "space": {"array": "A", "rank": 2, "element_type": "int64"},
// JSON: "strategy": "1d",
// JSON-NEXT: "space_dim": 1,
// JSON: "array_dim": 1,
// JSON-NEXT: "key_dim": 1,
// JSON: "vector": [1, 0]
