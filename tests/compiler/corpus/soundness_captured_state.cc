// Writes to state outside the loop body that is not a DistArray (a captured sum, a container, a
// global) are shared by all iterations: the loop runs serially, and the note says what to use
// instead. An Accumulator, locals and reads of captured values keep the parallel schedule.
#include <atomic>
#include <vector>

#include <tessera/tessera.h>

int64_t g_count = 0;

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto out = tessera::DistArray<double, 1>::dense(ctx, {100});
  double sum = 0;
  std::vector<int64_t> seen;
  tessera::Accumulator<double> acc(ctx);
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { sum += r; });  // expected-warning {{will run serially}} expected-note {{cannot see through: 'sum' writes 'sum', state outside the loop body that every iteration shares; for a sum over iterations use a tessera::Accumulator}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { seen.push_back(k[0]); });  // expected-warning {{will run serially}} expected-note {{cannot see through: 'seen' writes 'seen', state outside the loop body}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { ++g_count; });  // expected-warning {{will run serially}} expected-note {{cannot see through: 'g_count' writes 'g_count'}}
  tessera::parallel_for(R, [&, n = 0](const tessera::Key<2>& k, float& r) mutable { n += 1; });  // expected-warning {{will run serially}} expected-note {{cannot see through: 'n' writes 'n'}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { acc += r; });  // expected-remark {{independent (space: key[0]); 'R' local}}
  // A std::atomic counter whose updates commute and whose results are unused keeps the schedule
  // (with a note); one whose result is used (an order-dependent ticket) does not.
  std::atomic<int64_t> ran{0};
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { ran.fetch_add(1); });  // expected-remark {{independent (space: key[0]); 'R' local; conservative where tessc could not see through (1 note)}} expected-note {{conservative: 'ran' is a std::atomic updated by commuting operations whose results are unused}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { if (ran.fetch_add(1) == 0) out(k[0]) += r; });  // expected-warning {{will run serially}} expected-note {{cannot see through: 'ran' writes 'ran'}} expected-note {{cannot see through: 'std::__atomic_base' is read or updated in a way whose result depends on the order iterations run in}}
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'out' local}}
    double local = 0;
    std::vector<double> scratch(4, 0.0);
    scratch[k[1] % 4] += r;
    local += scratch[0];
    out(k[0]) += local + sum;
  });
}
