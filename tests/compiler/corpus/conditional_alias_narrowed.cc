// A reference chosen at run time between W and H, both updated at row key[0]: tessc narrows X to
// {W, H} (not to every float 2-D array), so G, updated at row key[1], is unaffected and the loop
// keeps its 2D schedule. (Counting X against G as well would give G the dependence (*, *).)
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto G = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto& X = argc > 1 ? W : H;  // expected-note {{conservative: 'X' may name 'W' or 'H' (chosen at run time)}}
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' local, 'X' local, 'G' rotating; conservative where tessc could not see through (1 note)}}
    X(key[0], 0) += r;
    G(key[1], 0) += r;
  });
}
// JSON: "name": "X",
// JSON-NEXT: "placement": "local",
// JSON-NEXT: "kind": "may_alias",
