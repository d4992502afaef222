// Calls tessc cannot see through make the loop run serially, with a warning naming the call:
// std::function, function pointers, virtual calls, methods defined in another translation unit.
// A lambda called by name, and a functor defined here, are walked like helpers.
#include <functional>

#include <tessera/tessera.h>

struct Model {
  virtual ~Model() = default;
  virtual void Update(int64_t u, int64_t i, float r);
};

class Factors {
 public:
  explicit Factors(tessera::Context& ctx) : user_(tessera::DistArray<float, 1>::dense(ctx, {100})) {}
  void Step(int64_t u, int64_t i, float r);  // defined in another translation unit
  void Local(int64_t u, float r) { user_(u) += r; }

 private:
  tessera::DistArray<float, 1> user_;
};

void Touch(tessera::DistArray<float, 1>& h, int64_t i) { h(i) += 1; }

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto hits = tessera::DistArray<float, 1>::dense(ctx, {100});
  // Its own array: an indirect call might put another array in the variable it is given.
  auto counts = tessera::DistArray<float, 1>::dense(ctx, {100});
  std::function<void(int64_t)> bump = [&](int64_t i) { hits(i) += 1; };
  auto lambda_bump = [&](int64_t i) { hits(i) += 1; };
  void (*fp)(tessera::DistArray<float, 1>&, int64_t) = &Touch;
  Model* model = nullptr;
  Factors factors(ctx);
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float&) { bump(k[1]); });  // expected-warning {{parallel_for over 'R' will run serially: its body reaches state tessc cannot model (1 reason below)}} expected-note {{cannot see through: 'bump' is called through a std::function: tessc cannot see which function it holds}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float&) { lambda_bump(k[0]); });  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'hits' local}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float&) { Touch(hits, k[0]); });  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'hits' local}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float&) {  // expected-note {{make 'counts' a tessera::RelaxedArray}}
    fp(counts, k[0]);  // expected-error {{accesses to 'counts' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{cannot see through: 'fp' is called through a pointer}} expected-note {{conservative: 'counts' is passed to an indirect call}}
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-warning {{will run serially: its body reaches state tessc cannot model (2 reasons below)}}
    model->Update(k[0], k[1], r);  // expected-note {{cannot see through: 'Model::Update' is virtual: an override tessc cannot see}} expected-note {{cannot see through: 'Model::Update' is not defined in this translation unit}}
  });
  // Step may change `factors` itself (a non-const method tessc cannot see): two reasons.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-warning {{will run serially: its body reaches state tessc cannot model (2 reasons below)}}
    factors.Step(k[0], k[1], r);  // expected-note {{cannot see through: 'Factors::Step' is not defined in this translation unit}} expected-note {{cannot see through: 'factors' writes 'factors', state outside the loop body}}
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'user_' local}}
    factors.Local(k[0], r);
  });
}
