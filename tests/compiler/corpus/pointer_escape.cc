// NEGATIVE: a pointer into W escapes to a function tessc cannot see (declared, not defined here).
// Through it any element of W may be read or written, so W conflicts with itself everywhere
// (*, *) and the loop has no schedule; the note says the analysis was conservative.
#include <tessera/tessera.h>

void Consume(float* p, int64_t n);  // defined elsewhere

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    float* p = &W(key[0], 0);  // expected-error {{accesses to 'W' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{conservative: a pointer into 'W' escapes (its address is taken); assuming any element of 'W' is read and written}}
    Consume(p, 4);  // expected-note {{cannot see through: 'Consume' is not defined in this translation unit}}
  });
}
