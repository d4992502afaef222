// NEGATIVE: every iteration adds into the same cell total(0) (a reduction written as an array
// update). Dependence (*): no partition. The note points to the fixes; a tessera::Accumulator
// (see accumulator.cc) is the intended way to write this.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto x = tessera::DistArray<double, 1>::dense(ctx, {100});
  auto total = tessera::DistArray<double, 1>::dense(ctx, {1});
  tessera::parallel_for(x, [&](const tessera::Key<1>& key, double& v) {  // expected-note {{make 'total' a tessera::RelaxedArray}}
    total(0) += v;  // expected-error {{accesses to 'total' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access}}
  });
}
