// NEGATIVE, FIXME (known miss): A(key[0] + key[1]) is updated. Two iterations meet when
// d0 + d1 = 0, i.e. d = (t, -t): every such dependence is carried by key[0], so the wavefront
// h = (1, 0) would be legal. tessc keeps one distance-or-* per key dim, sees only (*, *), and
// reports an error instead of the unimodular schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {128});
  auto grid = tessera::DistArray<float, 2>::dense(ctx, {64, 64});
  tessera::parallel_for(grid, [&](const tessera::Key<2>& key, float& g) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    A(key[0] + key[1]) += g;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}}
  });
}
