// NEGATIVE: two names for one array through reference members. Pair holds two references that
// tessc cannot tie to particular arrays (here both name W), so each is treated as possibly any
// float 2-D array: the MF pattern then conflicts (*, *).
#include <tessera/tessera.h>

struct Pair {
  tessera::DistArray<float, 2>& a;
  tessera::DistArray<float, 2>& b;
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  Pair p{W, W};
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'a' a tessera::RelaxedArray}} expected-note {{tessc could not tell which array 'a' is}}
    p.a(key[0], 0) += r;  // expected-note {{conservative: 'a' may name any array of its type}} expected-note {{cannot see through: 'a' is looked up by key (operator()) and tessc cannot prove it dense}} expected-error {{accesses to 'a' conflict across iterations with dependence vector (*, *)}}
    p.b(key[1], 0) += r;  // expected-note {{conservative: 'b' may name any array of its type}} expected-note {{cannot see through: 'b' is looked up by key (operator()) and tessc cannot prove it dense}} expected-note {{conflicting access to 'a'}}
  });
}
