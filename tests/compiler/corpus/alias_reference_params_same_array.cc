// NEGATIVE: two names for one array. Train() is called with the same array for both parameters,
// so A and B may be one array; tessc counts each one's accesses against the other (and says so),
// which turns the MF pattern into conflicts (*, *) between A(key[0], ..) and B(key[1], ..).
#include <tessera/tessera.h>

void Train(tessera::DistArray<float, 2>& ratings, tessera::DistArray<float, 2>& A,
           tessera::DistArray<float, 2>& B) {  // expected-note {{conservative: 'A' and 'B' may name the same array (a call passes the same array twice); their accesses are counted against both}}
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    A(key[0], 0) += r;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*, *)}}
    B(key[1], 0) += r;  // expected-note {{conflicting access to 'A'}}
  });
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  Train(ratings, W, W);
}
