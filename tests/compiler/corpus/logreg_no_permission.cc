// NEGATIVE: sparse logistic regression without DataParallel. Each sample updates w at feature ids
// read from the data, so any two samples may conflict on w, (*, *): no partition is legal, and
// the note suggests permitting data-parallel execution.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto samples = tessera::DistArray<int32_t, 2>::sparse(ctx, {1000, 32});  // (sample, slot) -> feature id
  auto w = tessera::DistArray<float, 1>::dense(ctx, {5000});
  tessera::parallel_for(samples, [&](const tessera::Key<2>& key, int32_t& feature) {  // expected-note {{permit data-parallel execution with tessera::parallel_for(samples, body, tessera::DataParallel{.staleness = s})}}
    w(feature) += 0.1f;  // expected-error {{accesses to 'w' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access in different iterations}}
  });
}
