// Aliasing through references that tessc can follow: `Wr` (declared outside the loop) and `Hr`
// (inside the body) are references to W and H, and `p` points to W. Every access is attributed to
// the array it really names, so the schedule is MF's 2D one and the arrays are listed once.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 200});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {200, 4});
  auto& Wr = W;
  tessera::DistArray<float, 2>* p = &W;
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'H' rotating, 'W' local}}
    auto& Hr = H;
    Wr(key[0], 0) += r * Hr(key[1], 0);
    Hr(key[1], 0) += r * (*p)(key[0], 0);
    p->row(key[0])[1] -= r;
  });
}
// JSON: "strategy": "2d",
