// NEGATIVE: CP tensor factorization with three factor matrices. Dependences (0, *, *), (*, 0, *)
// and (*, *, 0): any two key dims chosen as space and time leave the third factor conflicting
// across concurrently running blocks, so neither 1D nor 2D is legal. (Relaxing one factor, or
// permitting data-parallel, are the ways out.)
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto T = tessera::DistArray<float, 3>::sparse(ctx, {10, 10, 10});
  auto A = tessera::DistArray<float, 2>::dense(ctx, {10, 4});
  auto B = tessera::DistArray<float, 2>::dense(ctx, {10, 4});
  auto C = tessera::DistArray<float, 2>::dense(ctx, {10, 4});
  tessera::parallel_for(T, [&](const tessera::Key<3>& key, float& t) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    A(key[0], 0) += t;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (0, *, *)}} expected-note {{the conflict is between this access}}
    B(key[1], 0) += t;
    C(key[2], 0) += t;
  });
}
