// NEGATIVE: A(key[0] + key[1]) written and A(key[0] + key[1] - 1) read. The conflicts
// d0 + d1 = 1 include (0, 1) and, reversed, (1, -2) (iteration (4, 2) reads what (5, 0) writes
// later): no wavefront row h orders them all, so the loop has no schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {128});
  auto grid = tessera::DistArray<float, 2>::dense(ctx, {64, 64});
  tessera::parallel_for(grid, [&](const tessera::Key<2>& key, float& g) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    if (key[0] + key[1] > 0) A(key[0] + key[1]) = A(key[0] + key[1] - 1) + g;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*, *)}} expected-note {{conflicting access to 'A'}}
  });
}
