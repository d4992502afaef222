// Logistic regression with the weights in a relaxed table (staleness 3): their reads and add()s
// are excluded from the dependence analysis, so nothing conflicts across samples and the loop is
// independent; the table goes to the servers with its staleness.
#include <cmath>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto features = tessera::DistArray<int32_t, 2>::sparse(ctx, {1000, 32});
  auto w = tessera::RelaxedArray<float, 1>::dense(ctx, {5000}, 3);
  tessera::parallel_for(features, [&](const tessera::Key<2>& key, int32_t& f) {  // expected-remark {{independent (space: key[0]); 'features' local, 'w' servers (relaxed)}}
    const float p = 1.0f / (1.0f + std::exp(-w(f)));
    w.add(f, -0.1f * p);
  });
}
// JSON: "strategy": "independent",
// JSON: "name": "w",
// JSON-NEXT: "placement": "servers",
// JSON-NEXT: "kind": "relaxed",
// JSON: "staleness": 3,
// JSON: "mode": "read",
// JSON: "mode": "update_additive",
