// Row scaling: every element scales itself through the loop's element reference. Only the same
// iteration touches an element: independent.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<double, 2>::random(ctx, {64, 64}, 7, 0.0, 1.0);
  auto scale = tessera::DistArray<double, 1>::random(ctx, {64}, 8, 0.5, 2.0);
  tessera::parallel_for(A, [&](const tessera::Key<2>& key, double& a) {  // expected-remark {{parallel_for over 'A' independent (space: key[0]); 'A' local, 'scale' local}}
    a *= scale(key[0]);
  });
}
// JSON: "strategy": "independent",
// JSON: "dependences": []
