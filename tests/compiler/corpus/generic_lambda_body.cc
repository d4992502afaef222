// A generic lambda body (`auto` parameters): tessc walks the instantiation parallel_for made,
// whose subscripts are no longer type-dependent. Same 2D schedule as MF with explicit types.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const auto& key, auto& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    W(key[0], 0) += r * H(key[1], 0);
    H(key[1], 0) += r * W(key[0], 0);
  });
}
// JSON: "name": "W",
// JSON: "mode": "update_additive",
// JSON-NEXT: "subscripts": [{"key": [1, 0], "constant": 0, "text": "key[0]"}, {"key": [0, 0], "constant": 0, "text": "0"}]
