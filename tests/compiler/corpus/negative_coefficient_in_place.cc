// A(n - key[0]) updated in place: both sides of the self-dependence have coefficient -1 and the
// same symbol, so the distance is exactly 0 and the loop is independent.
// FIXME: A is written through a reversed index (n - key[0]), which tessc does not partition (only
// key[d] + c is), so A goes to the servers although a reversed block partition would keep it local.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const int64_t n = argc + 98;
  auto A = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto order = tessera::DistArray<int32_t, 1>::dense(ctx, {100});
  tessera::parallel_for(order, [&](const tessera::Key<1>& key, int32_t&) {  // expected-remark {{independent (space: key[0]); 'order' local, 'A' servers}}
    A(n - key[0]) *= 2.0f;
  });
}
// JSON: "strategy": "independent",
// JSON: "dependences": []
