// An indirect subscript that is only read: B(key[0]) = A(idx(key[0])). The read of A has an
// unknown subscript, which is harmless without writes to A: independent, with A replicated (it
// cannot be partitioned along the key) and idx local.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto idx = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  auto A = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto B = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(B, [&](const tessera::Key<1>& key, float& b) {  // expected-remark {{independent (space: key[0]); 'B' local, 'A' replicated, 'idx' local}}
    b = A(idx(key[0]));
  });
}
// JSON: "name": "A",
// JSON-NEXT: "placement": "replicated",
// JSON: "subscripts": [{"unknown": true}]
