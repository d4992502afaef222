// NEGATIVE: a pointer to an array that is re-pointed through a reference to it before the loop.
// tessc cannot tell which array `p` names at the loop, so it may be any float 2-D array: its
// writes at row key[1] are counted against W (written at row key[0]) too, (*, *).
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::DistArray<float, 2>* p = &H;
  tessera::DistArray<float, 2>*& alias = p;
  if (argc > 3) alias = &W;
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    W(key[0], 0) += r;  // expected-error {{accesses to 'W' conflict across iterations with dependence vector (*, *)}} expected-note {{'W' may be given another array at line 13}}
    (*p)(key[1], 0) += r;  // expected-note {{conservative: 'p' may name any array of its type}} expected-note {{cannot see through: 'p' is looked up by key (operator()) and tessc cannot prove it dense}} expected-note {{conflicting access to 'W'}}
  });
}
