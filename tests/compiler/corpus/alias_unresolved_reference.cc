// NEGATIVE: a reference whose target is chosen at run time (a conditional picks W or H). X may be
// either, so its writes along key[1] are also counted against W, which is written along key[0]:
// (*, *) on W, no schedule. The conservative note says why.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto& X = argc > 1 ? W : H;  // expected-note {{conservative: 'X' may name 'W' or 'H' (chosen at run time); its accesses are counted against each of them}}
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    W(key[0], 0) += r;  // expected-error {{accesses to 'W' conflict across iterations with dependence vector (*, *)}}
    X(key[1], 0) += r;  // expected-note {{conflicting access to 'W'}}
  });
}
