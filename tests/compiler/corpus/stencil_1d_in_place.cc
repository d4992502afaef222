// NEGATIVE: an in-place 1-D stencil (Gauss-Seidel sweep). Iteration i reads A(i-1), written by
// iteration i-1: a constant-distance recurrence along the only key dim. With one key dim there is
// no other dim to partition or skew along, so no strategy is legal.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::random(ctx, {1024}, 1, 0.f, 1.f);
  tessera::parallel_for(A, [&](const tessera::Key<1>& key, float& a) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    if (key[0] == 0 || key[0] == 1023) return;
    a = (A(key[0] - 1) + A(key[0] + 1)) / 2;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (1)}} expected-note {{conflicting access to 'A'}}
  });
}
