// An exception that leaves an iteration: in the serial loop the iterations before it have run and
// none after; on several threads others have run or are running. The loop runs serially.
#include <stdexcept>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    if (v < 0) throw std::runtime_error("negative");  // expected-note {{cannot see through: an exception thrown here may leave the iteration}} expected-note {{cannot see through: 'std::runtime_error' is not on tessc's list of library classes}}
    v += 1;
  });
}
