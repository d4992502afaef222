// Only W is updated (row key[0]); H is read at row key[1]. The dependence (0, *) allows 1D over
// key[0]; H is read-only and not indexed by key[0], so it is replicated.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'ratings' local, 'W' local, 'H' replicated}}
    auto w = W.row(key[0]);
    auto h = H.row(key[1]);
    for (int64_t j = 0; j < w.size(); ++j) w[j] += r * h[j];
  });
}
// JSON: "strategy": "1d",
// JSON-NEXT: "space_dim": 0,
// JSON-NEXT: "time_dim": null,
