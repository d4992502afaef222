// Two loops in one function get one schedule each, matched by line: first an independent scaling,
// then MF's 2D update.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(W, [&](const tessera::Key<2>&, float& w) { w *= 0.5f; });  // expected-remark {{parallel_for over 'W' independent}}
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{parallel_for over 'ratings' partitioned 2D}}
    W(key[0], 0) += r * H(key[1], 0);
    H(key[1], 0) += r * W(key[0], 0);
  });
}
// JSON: "line": 10,
// JSON: "strategy": "independent",
// JSON: "line": 11,
// JSON: "strategy": "2d",
