// NEGATIVE: a lambda handed to a function tessc does not walk (std::for_each from a system
// header) may run any number of times, so tessc walks its body once with its parameters unbound.
// It writes total(0) from every iteration: dependence (*), no schedule. (Without walking the
// callback the write would be missed and the loop wrongly called independent.)
#include <algorithm>
#include <vector>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto x = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto total = tessera::DistArray<float, 1>::dense(ctx, {1});
  const std::vector<float> weights = {0.5f, 0.25f};
  tessera::parallel_for(x, [&](const tessera::Key<1>& key, float& v) {  // expected-note {{make 'total' a tessera::RelaxedArray}}
    std::for_each(weights.begin(), weights.end(), [&](float wt) {
      total(0) += wt * v;  // expected-error {{accesses to 'total' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access}}
    });
  });
}
