// NEGATIVE: an in-place transpose A(i, j) = A(j, i). The subscripts swap key components (different
// coefficients on each side), so the distance is unknown in both dims: (*, *), no schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 2>::dense(ctx, {64, 64});
  tessera::parallel_for(A, [&](const tessera::Key<2>& key, float& a) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    a = A(key[1], key[0]);  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*, *)}} expected-note {{conflicting access to 'A'}}
  });
}
