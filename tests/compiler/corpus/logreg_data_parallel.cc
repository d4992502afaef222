// Sparse logistic regression with the user's DataParallel permission. Each sample (key[0]) lists
// its feature ids in its slots (key[1]); it reads and updates w at those ids, which tessc cannot
// know (subscript read from the data): any two samples may conflict on w, (*, *). The margin is
// per sample (0, *). The conflicting writes are additive ('-='), so the permitted data-parallel
// strategy applies: w on the servers with the permitted staleness, the rest local.
#include <cmath>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto features = tessera::DistArray<int32_t, 2>::sparse(ctx, {1000, 32});  // (sample, slot) -> id
  auto values = tessera::DistArray<float, 2>::dense(ctx, {1000, 32});  // dense: looked up by key
  auto label = tessera::DistArray<float, 1>::dense(ctx, {1000});
  auto margin = tessera::DistArray<float, 1>::dense(ctx, {1000});
  auto w = tessera::DistArray<float, 1>::dense(ctx, {5000});
  tessera::parallel_for(features, [&](const tessera::Key<2>& key, int32_t& f) {  // expected-remark {{data-parallel (space: key[0], staleness: 2); 'features' local, 'values' local, 'w' servers, 'margin' local, 'label' local}}
    const float v = values(key[0], key[1]);
    const float p = 1.0f / (1.0f + std::exp(-w(f) * v));
    margin(key[0]) += w(f) * v;
    w(f) -= 0.1f * (p - label(key[0])) * v;
  }, tessera::DataParallel{.staleness = 2});
}
// JSON: "strategy": "data_parallel",
// JSON: "data_parallel": {"permitted": true, "staleness": 2},
// JSON-NEXT: "staleness": 2,
// JSON: "name": "w",
// JSON-NEXT: "placement": "servers",
// JSON: "additive_writes_only": true,
// JSON: "name": "margin",
// JSON-NEXT: "placement": "local",
