// NEGATIVE: a row view returned by a function tessc does not walk (declared only). The view may
// be any row of any float 2-D array, so its write conflicts with itself across iterations (*, *)
// and is also counted against W and H. (Dropping the access would wrongly allow 2D.)
#include <tessera/tessera.h>

tessera::RowView<float> PickRow(int64_t i);  // defined elsewhere

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{tessc could not tell which array 'expression at line 16' is}} expected-note {{make 'expression at line 16' a tessera::RelaxedArray}}
    W(key[0], 0) += r;
    H(key[1], 0) += r;
    PickRow(key[0])[1] += r;  // expected-note {{conservative: 'expression at line 16' may name any array of its type}} expected-error {{accesses to 'expression at line 16' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access in different iterations}}
  });
}
