// NEGATIVE: an indirect subscript A(idx(key[0])). tessc cannot know which elements idx maps to
// (two iterations may hit the same one), so the write's subscript is unknown and the conservative
// dependence (*) rules out every schedule of this 1-D loop.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto idx = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  auto A = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(idx, [&](const tessera::Key<1>& key, int64_t& target) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    A(idx(key[0])) = 1.0f;  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access in different iterations}}
  });
}
