// Logistic regression over a (sample, feature) matrix where the feature IS key[1]: w(key[1]) gives
// (*, 0) and grad(key[0]) gives (0, *), the 2D pattern. Even with DataParallel permitted, tessc
// prefers the serializable 2D schedule (strategies are tried in order, data-parallel last).
#include <cmath>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto x = tessera::DistArray<float, 2>::sparse(ctx, {1000, 5000});
  auto y = tessera::DistArray<float, 1>::dense(ctx, {1000});
  auto w = tessera::DistArray<float, 1>::dense(ctx, {5000});
  auto grad = tessera::DistArray<float, 1>::dense(ctx, {1000});
  tessera::parallel_for(x, [&](const tessera::Key<2>& key, float& v) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'x' local, 'w' rotating, 'grad' local, 'y' local}}
    const float p = 1.0f / (1.0f + std::exp(-w(key[1]) * v));
    grad(key[0]) += p - y(key[0]);
    w(key[1]) -= 0.1f * (p - y(key[0])) * v;
  }, tessera::DataParallel{.staleness = 2});
}
// JSON: "strategy": "2d",
// JSON: "data_parallel": {"permitted": true, "staleness": 2},
