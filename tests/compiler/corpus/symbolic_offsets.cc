// NEGATIVE: A(key[0] + s) is written and A(key[0] + t) read, with s and t loop-invariant but
// unknown. The distance t - s is some constant tessc cannot know, so it is (*): no schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const int64_t s = argc;
  const int64_t t = 2 * argc;
  auto A = tessera::DistArray<float, 1>::dense(ctx, {300});
  auto space = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(space, [&](const tessera::Key<1>& key, float&) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    A(key[0] + s) = A(key[0] + t);  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{conflicting access to 'A'}}
  });
}
