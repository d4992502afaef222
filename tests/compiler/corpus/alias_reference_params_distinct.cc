// The loop lives in a function taking its arrays by reference. Every call in this translation
// unit passes distinct arrays, so tessc treats W and H as distinct: MF's 2D schedule.
#include <tessera/tessera.h>

void Train(tessera::DistArray<float, 2>& ratings, tessera::DistArray<float, 2>& W,
           tessera::DistArray<float, 2>& H) {
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, 'H' rotating}}
    W(key[0], 0) += r * H(key[1], 0);
    H(key[1], 0) += r * W(key[0], 0);
  });
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto U = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto V = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  Train(ratings, U, V);
  Train(ratings, V, U);
}
// JSON: "function": "Train",
