// NEGATIVE (degrades to serial): the body is a function object, not a lambda. tessc does not
// analyse it; it warns and emits no schedule, only an entry saying the site runs serially and why,
// so the runtime runs this loop serially and says that tessc chose so.
#include <tessera/tessera.h>

struct Scale {
  void operator()(const tessera::Key<1>&, float& v) const { v *= 2; }
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {10});
  tessera::parallel_for(A, Scale{});  // expected-warning {{tessc cannot analyse this parallel_for (the loop body is not a lambda tessc can see); it will run serially}}
}
// JSON: "strategy": "serial", "serial_reasons": ["the loop body is not a lambda tessc can see"]
