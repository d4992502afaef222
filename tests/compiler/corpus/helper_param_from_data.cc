// NEGATIVE: a helper's integer parameter fed from data. Inside Put(), `offset` is idx(key[0]),
// different in every iteration, so A(base + offset) is an unknown subscript, not key[0] plus a
// loop-invariant constant. (Treating it as invariant would wrongly prove the writes distinct.)
#include <tessera/tessera.h>

static void Put(tessera::DistArray<float, 1>& A, int64_t base, int64_t offset, float v) {
  A(base + offset) = v;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access in different iterations}}
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto idx = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  auto A = tessera::DistArray<float, 1>::dense(ctx, {300});
  tessera::parallel_for(idx, [&](const tessera::Key<1>& key, int64_t& i) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    Put(A, key[0], i, 1.0f);  // expected-note {{reached from the loop body through this call}}
  });
}
