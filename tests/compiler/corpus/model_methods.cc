// The update lives in methods of a user class that owns the factor matrices. tessc walks methods
// defined in this translation unit like helper functions; members reached through `this` are the
// class's arrays: MF's 2D schedule.
#include <tessera/tessera.h>

class Factors {
 public:
  explicit Factors(tessera::Context& ctx)
      : user_(tessera::DistArray<float, 2>::dense(ctx, {100, 4})),
        item_(tessera::DistArray<float, 2>::dense(ctx, {100, 4})) {}

  void Step(int64_t u, int64_t i, float rating) {
    const float err = rating - Predict(u, i);
    user_(u, 0) += 0.01f * err * item_(i, 0);
    item_(i, 0) += 0.01f * err * user_(u, 0);
  }
  float Predict(int64_t u, int64_t i) const { return user_(u, 0) * item_(i, 0); }

 private:
  tessera::DistArray<float, 2> user_;
  tessera::DistArray<float, 2> item_;
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  Factors model(ctx);
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'user_' local, 'item_' rotating}}
    model.Step(key[0], key[1], r);
  });
}
