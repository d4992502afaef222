// The iteration space reached through a reference to a member of another object (as apps/mf does
// with load_triples' result): the array is reported under the name the program uses, 'ratings'.
#include <tessera/tessera.h>

struct Loaded {
  tessera::DistArray<float, 2> train;
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  Loaded loaded{tessera::DistArray<float, 2>::sparse(ctx, {10, 10})};
  tessera::DistArray<float, 2>& ratings = loaded.train;
  auto W = tessera::DistArray<float, 2>::dense(ctx, {10, 4});
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{parallel_for over 'ratings' partitioned 1D (space: key[0]); 'ratings' local, 'W' local}}
    W(key[0], 0) += r;
  });
}
