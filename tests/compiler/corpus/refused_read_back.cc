// Reading back an atomic or an Accumulator inside the loop sees the updates of whichever
// iterations ran before: order-dependent, so the loop runs serially. Adding to an Accumulator
// (without reading it) keeps the schedule.
#include <atomic>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  std::atomic<int64_t> count{0};
  tessera::Accumulator<int64_t> total(ctx);
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    count.fetch_add(1);  // expected-note {{conservative: 'count' is a std::atomic updated by commuting operations whose results are unused}}
    v = count.load();  // expected-note {{cannot see through: 'std::__atomic_base' is read or updated in a way whose result depends on the order iterations run in}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    total += v;
    v = total.value();  // expected-note {{cannot see through: 'tessera::Accumulator<long>::value' reads back (or resets) an Accumulator inside the loop}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) { total += v; });  // expected-remark {{independent (space: key[0]); 'P' local}}
}
