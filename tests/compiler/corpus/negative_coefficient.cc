// A negative coefficient: B(key[0]) = A(n - key[0]) reverses A. The subscript keeps its sign and
// the loop-invariant symbol n. Only B is written, at key[0]: independent. A is indexed by -key[0],
// not key[0] + c, so it is replicated rather than partitioned.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const int64_t n = argc > 5 ? 99 : 63;  // not a compile-time constant
  auto A = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto B = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(B, [&](const tessera::Key<1>& key, float& b) {  // expected-remark {{independent (space: key[0]); 'B' local, 'A' replicated}}
    b = A(n - key[0]);
  });
}
// JSON: "name": "A",
// JSON: "subscripts": [{"key": [-1], "constant": 0, "symbols": {"n": 1}, "text": "-key[0] + n"}]
