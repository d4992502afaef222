// NEGATIVE: the conflicting write hides in a helper function. The error points at the access
// inside the helper, and a note shows the call in the loop body that leads there.
#include <tessera/tessera.h>

static void Record(tessera::DistArray<int64_t, 1>& hist, int32_t bucket) {
  hist(bucket) += 1;  // expected-error {{accesses to 'histogram' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access in different iterations}}
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto values = tessera::DistArray<int32_t, 1>::dense(ctx, {1000});
  auto histogram = tessera::DistArray<int64_t, 1>::dense(ctx, {16});
  tessera::parallel_for(values, [&](const tessera::Key<1>& key, int32_t& v) {  // expected-note {{make 'histogram' a tessera::RelaxedArray}}
    Record(histogram, v % 16);  // expected-note {{reached from the loop body through this call}}
  });
}
