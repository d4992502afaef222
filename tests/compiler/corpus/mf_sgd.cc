// Matrix factorization by SGD: each rating (user, item) updates row key[0] of W and row key[1] of H
// through row views. Dependences (0, *) on W and (*, 0) on H: the 2D space-time schedule, W stays
// with the space dim, H rotates with the time dim.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 200});
  auto W = tessera::DistArray<float, 2>::random(ctx, {100, 8}, 1, 0.f, 1.f);
  auto H = tessera::DistArray<float, 2>::random(ctx, {200, 8}, 2, 0.f, 1.f);
  const float lr = 0.01f;
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& rating) {  // expected-remark {{parallel_for over 'ratings' partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    auto w = W.row(key[0]);
    auto h = H.row(key[1]);
    float pred = 0;
    for (int64_t j = 0; j < w.size(); ++j) pred += w[j] * h[j];
    const float err = rating - pred;
    for (int64_t j = 0; j < w.size(); ++j) {
      const float wj = w[j];
      w[j] += lr * err * h[j];
      h[j] += lr * err * wj;
    }
  });
}
// JSON: "line": 12,
// JSON: "strategy": "2d",
// JSON-NEXT: "space_dim": 0,
// JSON-NEXT: "time_dim": 1,
// JSON: "name": "W",
// JSON-NEXT: "placement": "local",
// JSON: "array_dim": 0,
// JSON-NEXT: "key_dim": 0,
// JSON: "index_map": [0, null],
// JSON: "mode": "update_additive",
// JSON-NEXT: "subscripts": [{"key": [1, 0], "constant": 0, "text": "key[0]"}, {"unknown": true}]
// JSON: "name": "H",
// JSON-NEXT: "placement": "rotating",
// JSON: "array_dim": 0,
// JSON-NEXT: "key_dim": 1,
// JSON: "dependences": [
// JSON: {"array": "W", "vector": [0, "*"]
// JSON: {"array": "H", "vector": ["*", 0]
