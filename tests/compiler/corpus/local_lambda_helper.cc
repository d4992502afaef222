// Updates through a helper lambda defined inside the body; its parameters are bound to the
// call's arguments (a row index and an element reference).
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    auto shrink_row = [&](int64_t row, float by) { W(row, 0) *= by; };
    auto add_to = [](float& x, float by) { x += by; };
    shrink_row(key[0], 0.9f);
    add_to(H(key[1], 2), r);
  });
}
