// A coupled subscript: A(key[0] + key[1]) is updated. Two iterations meet exactly when
// d0 + d1 = 0, i.e. d = t * (1, -1). Per dim that is (*, *), which rules out 1D and 2D, but the
// exact ray is carried by h = (1, 0): every row key[0] = const is a conflict-free wavefront.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {128});
  auto grid = tessera::DistArray<float, 2>::dense(ctx, {64, 64});
  tessera::parallel_for(grid, [&](const tessera::Key<2>& key, float& g) {  // expected-remark {{unimodular wavefront (skew [1 0; 0 1]); 'grid' replicated, 'A' servers}}
    A(key[0] + key[1]) += g;
  });
}
// JSON: "dependences": [{"array": "A", "vector": ["*", "*"], "lines": [11, 11], "ray": [1, -1]}]
