// NEGATIVE: W is passed by non-const reference to a function whose body is not in this
// translation unit. It may read and write any element of W, so W conflicts everywhere (*, *).
#include <tessera/tessera.h>

void Regularize(tessera::DistArray<float, 2>& W, int64_t row);  // defined elsewhere

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    Regularize(W, key[0]);  // expected-error {{accesses to 'W' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{conservative: 'W' is passed to Regularize, whose body tessc cannot see; assuming it reads and writes any element}} expected-note {{cannot see through: 'Regularize' is not defined in this translation unit}}
  });
}
