// NEGATIVE: DataParallel is permitted, but the conflicting write is a plain assignment, whose
// result would depend on which worker writes last: data-parallel needs additive writes.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto samples = tessera::DistArray<int32_t, 2>::sparse(ctx, {1000, 32});
  auto w = tessera::DistArray<float, 1>::dense(ctx, {5000});
  tessera::parallel_for(samples, [&](const tessera::Key<2>& key, int32_t& feature) {  // expected-note {{write 'w' with '+=' / '-=', or make it a tessera::RelaxedArray updated with add()}}
    w(feature) = 0.5f * w(feature);  // expected-error {{data-parallel parallel_for over 'samples' needs additive writes, but this write to 'w' is not additive (dependence vector (*, *))}} expected-note {{the conflict is between this access in different iterations}}
  }, tessera::DataParallel{});
}
