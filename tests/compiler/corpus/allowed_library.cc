// Library code on tessc's list keeps the parallel schedule: <cmath>, std::min/max/clamp,
// algorithms and std::ranges over a row view with a lambda (whose reference parameter is an
// element of that row), std::span over a row (from the view, or from its data() and size()), a
// generator and distribution declared in the body, local containers and algorithms over them.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 8});
  auto b = tessera::DistArray<double, 1>::dense(ctx, {100});
  tessera::parallel_for(b, [&](const tessera::Key<1>& key, double& v) {  // expected-remark {{independent (space: key[0]); 'b' local}}
    v = std::sqrt(std::abs(v)) + std::exp(-v) + std::lgamma(v + 1.0);
    v = std::clamp(std::max(v, 0.0), 0.0, 10.0) + std::min(1.0, std::floor(v));
  });
  tessera::parallel_for(b, [&](const tessera::Key<1>& key, double& v) {  // expected-remark {{independent (space: key[0]); 'b' local, 'W' local}}
    auto w = W.row(key[0]);
    std::for_each(w.begin(), w.end(), [&](float& x) { x *= 2.0f; });
    std::ranges::for_each(w, [&](float& x) { x += 1.0f; });
    v = std::accumulate(w.begin(), w.end(), 0.0);
  });
  tessera::parallel_for(b, [&](const tessera::Key<1>& key, double& v) {  // expected-remark {{independent (space: key[0]); 'b' local, 'W' local}}
    auto w = W.row(key[0]);
    std::span<float> s(w);
    for (float& x : s) x = static_cast<float>(v);
    std::span<float> t(w.data(), w.size());
    std::ranges::fill(t, 0.5f);
  });
  tessera::parallel_for(b, [&](const tessera::Key<1>& key, double& v) {  // expected-remark {{independent (space: key[0]); 'b' local}}
    std::mt19937_64 rng(7 ^ static_cast<uint64_t>(key[0]));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> draws;
    for (int i = 0; i < 4; ++i) draws.push_back(u(rng));
    std::sort(draws.begin(), draws.end());
    std::array<double, 2> ends{draws.front(), draws.back()};
    v = ends[0] + ends[1];
  });
}
