// 1-D three-point stencil into a separate output: reads A at key[0]-1, key[0], key[0]+1, writes
// B at key[0]. No write conflicts between iterations: independent; A is partitioned with the
// space dim and needs a halo of one element on each side.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::random(ctx, {1024}, 1, 0.f, 1.f);
  auto B = tessera::DistArray<float, 1>::dense(ctx, {1024});
  tessera::parallel_for(B, [&](const tessera::Key<1>& key, float& b) {  // expected-remark {{independent (space: key[0]); 'B' local, 'A' local}}
    const int64_t i = key[0];
    if (i == 0 || i == 1023) return;
    b = (A(i - 1) + A(i) + A(i + 1)) / 3;
  });
}
// JSON: "name": "A",
// JSON-NEXT: "placement": "local",
// JSON: "halo": [-1, 1],
// JSON: "text": "key[0] - 1"
// JSON: "text": "key[0]"
// JSON: "text": "key[0] + 1"
