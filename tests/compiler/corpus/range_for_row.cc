// A range-for over a row view with a reference loop variable writes the whole row key[0] of W;
// one by value only reads row key[1] of H. 1D over key[0], H replicated.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'ratings' local, 'H' replicated, 'W' local}}
    float s = 0;
    for (float h : H.row(key[1])) s += h;
    for (float& w : W.row(key[0])) w *= s * r;
  });
}
// JSON: "name": "W",
// JSON: "mode": "update",
// JSON-NEXT: "subscripts": [{"key": [1, 0], "constant": 0, "text": "key[0]"}, {"unknown": true}]
