// Compound assignments of every kind: -= and += are additive updates, *= and /= are not (still
// read-modify-write). The schedule does not depend on it (2D); the JSON records the mode.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    W(key[0], 0) -= r;
    H(key[1], 1) *= 0.5f;
  });
}
// JSON: "name": "W",
// JSON: "additive_writes_only": true,
// JSON: "mode": "update_additive",
// JSON: "name": "H",
// JSON: "additive_writes_only": false,
// JSON: "mode": "update",
// JSON-NEXT: "subscripts": [{"key": [0, 1], "constant": 0, "text": "key[1]"}, {"key": [0, 0], "constant": 1, "text": "1"}]
