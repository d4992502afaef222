// NEGATIVE: a local initialised from the key but modified afterwards is no longer key[0]; tessc
// treats its value as unknown instead of trusting the initializer. A(row) is written with an
// unknown subscript: conflict (*) and no schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto space = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(space, [&](const tessera::Key<1>& key, float& v) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    int64_t row = key[0];
    if (v > 0.5f) row = 99 - row;
    A(row) = v;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access}}
  });
}
