// MF with the SGD update in helper functions of the same translation unit: Dot() and Update() take
// row views by value, Step() takes the arrays by reference plus the two row indices. tessc inlines
// them, so the result is the same 2D schedule as the inline version.
#include <tessera/tessera.h>

namespace {

float Dot(tessera::RowView<float> a, tessera::RowView<float> b) {
  float s = 0;
  for (int64_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
  return s;
}

void Update(tessera::RowView<float> w, tessera::RowView<float> h, float err, float lr) {
  for (int64_t j = 0; j < w.size(); ++j) {
    const float wj = w[j];
    w[j] += lr * err * h[j];
    h[j] += lr * err * wj;
  }
}

void Step(tessera::DistArray<float, 2>& W, tessera::DistArray<float, 2>& H, int64_t u, int64_t i,
          float rating) {
  auto w = W.row(u);
  auto h = H.row(i);
  Update(w, h, rating - Dot(w, h), 0.01f);
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 200});
  auto W = tessera::DistArray<float, 2>::random(ctx, {100, 8}, 1, 0.f, 1.f);
  auto H = tessera::DistArray<float, 2>::random(ctx, {200, 8}, 2, 0.f, 1.f);
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& rating) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    Step(W, H, key[0], key[1], rating);
  });
}
// JSON: "strategy": "2d",
// The accesses are reported where they happen, inside Update():
// JSON: "name": "W",
// JSON: "line": 17,
// JSON-NEXT: "column": 5,
// JSON-NEXT: "mode": "update_additive",
