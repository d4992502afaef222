// Arrays that are data members of a model struct: each field is its own array.
#include <tessera/tessera.h>

struct Model {
  tessera::DistArray<float, 2> user;
  tessera::DistArray<float, 2> item;
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  Model m{tessera::DistArray<float, 2>::dense(ctx, {100, 4}),
          tessera::DistArray<float, 2>::dense(ctx, {100, 4})};
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'user' local, 'item' rotating}}
    m.user(key[0], 0) += r;
    m.item.row(key[1])[0] += r;
  });
}
