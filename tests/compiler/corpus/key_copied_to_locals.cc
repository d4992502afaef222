// Key components copied to locals (and a local built from them): u, i and next are followed back
// to key[0], key[1] and key[1] + 1. W(u, ..) and H(next - 1, ..) are MF's pattern: 2D.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1])}}
    const int64_t u = key[0];
    int64_t i = key[1];
    const int64_t next = i + 1;
    W(u, 0) += r;
    H(next - 1, 0) += r;
  });
}
// JSON: "name": "H",
// JSON: "subscripts": [{"key": [0, 1], "constant": 0, "text": "key[1]"}, {"key": [0, 0], "constant": 0, "text": "0"}]
