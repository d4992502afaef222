// Library functions that are not on tessc's list of functions known to touch only their
// arguments make the loop run serially, with a note naming the function and the fix: the C
// library's generator, I/O, the clock and the system's entropy all give values (or output) that
// depend on the order iterations run in.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{will run serially}}
    v = (v * 3 + std::rand() % 1000) % 100;  // expected-note {{cannot see through: 'rand' draws from the C library's hidden generator}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{will run serially}}
    std::printf("%ld\n", static_cast<long>(v));  // expected-note {{cannot see through: 'printf' does I/O}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{will run serially}}
    std::cout << v << "\n";  // expected-note {{cannot see through: 'std::basic_ostream' does I/O}} expected-note {{cannot see through: 'std::cout << v' writes through}} expected-note {{cannot see through: 'std::cout' writes 'cout', state outside the loop body}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{will run serially}}
    v = std::chrono::steady_clock::now().time_since_epoch().count() % 7;  // expected-note 3 {{reads (or carries a reading of) the clock}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{will run serially}}
    std::random_device rd;  // expected-note {{cannot see through: 'std::random_device' reads the system's entropy}}
    v = rd() % 7;  // expected-note {{cannot see through: 'std::random_device' reads the system's entropy}}
  });
}
