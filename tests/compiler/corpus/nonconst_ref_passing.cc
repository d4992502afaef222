// Elements passed by non-const reference to a helper of this translation unit (Bump) and to a
// standard function (std::swap, whose body tessc does not walk: it updates both elements).
// W row key[0] and H row key[1]: 2D.
#include <utility>

#include <tessera/tessera.h>

static void Bump(float& x, float by) { x += by; }

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    Bump(W(key[0], 0), r);
    std::swap(H(key[1], 0), H(key[1], 1));
  });
}
// JSON: "name": "W",
// JSON: "line": 8,
// JSON-NEXT: "column": 40,
// JSON-NEXT: "mode": "update_additive",
// JSON: "name": "H",
// JSON: "mode": "update",
