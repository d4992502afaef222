// A lambda made before the loop and called from the body: its init-captures live in one closure
// that every iteration shares, so a mutable counter in it makes the loop serial. The same lambda
// made inside the body is per-iteration state and keeps the schedule.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  auto next = [n = int64_t{0}]() mutable { return n++; };  // expected-note {{cannot see through: 'n' writes 'n', state outside the loop body that every iteration shares}}
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) { v = next(); });  // expected-warning {{parallel_for over 'P' will run serially}}
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-remark {{independent (space: key[0]); 'P' local}}
    auto local = [n = int64_t{0}]() mutable { return n++; };
    v = local() + local();
  });
}
