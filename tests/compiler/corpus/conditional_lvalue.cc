// NEGATIVE: a conditional expression as the target of an assignment writes whichever branch is
// taken; here one branch is the shared cell B(0), written by many iterations: (*), no schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto B = tessera::DistArray<float, 1>::dense(ctx, {1});
  tessera::parallel_for(A, [&](const tessera::Key<1>& key, float& a) {  // expected-note {{make 'B' a tessera::RelaxedArray}}
    (a > 0.5f ? A(key[0]) : B(0)) = 1.0f;  // expected-error {{accesses to 'B' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access}}
  });
}
