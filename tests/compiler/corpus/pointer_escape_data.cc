// NEGATIVE: a row view's data() pointer escapes (stored in a global). Same conservative outcome as
// taking an element's address.
#include <tessera/tessera.h>

float* g_last_row = nullptr;

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    auto w = W.row(key[0]);
    g_last_row = w.data();  // expected-error {{dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{conservative: a pointer into 'W' escapes ('data()' is called)}} expected-note {{cannot see through: 'g_last_row' writes 'g_last_row', state outside the loop body that every iteration shares}}
  });
}
