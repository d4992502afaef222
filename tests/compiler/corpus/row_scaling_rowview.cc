// Row scaling over a 1-D iteration space: iteration r rescales row r of M through a row view
// (compound assignment in an inner loop). The row subscript pins the distance to 0: independent.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto norms = tessera::DistArray<float, 1>::dense(ctx, {128});
  auto M = tessera::DistArray<float, 2>::random(ctx, {128, 16}, 3, 0.f, 1.f);
  tessera::parallel_for(norms, [&](const tessera::Key<1>& key, float& norm) {  // expected-remark {{independent (space: key[0]); 'norms' local, 'M' local}}
    auto m = M.row(key[0]);
    for (int64_t j = 0; j < m.size(); ++j) norm += m[j] * m[j];
    for (int64_t j = 0; j < m.size(); ++j) m[j] /= norm;
  });
}
// JSON: "strategy": "independent",
// JSON: "name": "M",
// JSON-NEXT: "placement": "local",
// JSON: "mode": "update",
