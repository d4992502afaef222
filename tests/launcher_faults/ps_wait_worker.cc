// A program whose worker EARLY_RANK (default 0) returns from main at once, with status 3, while
// every other worker goes on to loops that add to a relaxed array and so wait, at each loop's end,
// for that worker's clock on the parameter servers: the job must stop within seconds, with the
// early worker's own status, naming it -- not after the parameter-server client's 10-minute wait,
// and not with the status of a worker stopped because of it.
#include <cstdio>
#include <cstdlib>

#include "tessera/tessera.h"

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const char* early = std::getenv("EARLY_RANK");
  const int early_rank = early != nullptr ? std::atoi(early) : 0;
  auto counts = tessera::RelaxedArray<int64_t, 1>::dense(ctx, {8}, /*staleness=*/0);
  if (ctx.job().rank == early_rank) {
    std::fprintf(stderr, "ps_wait_worker: worker %d gives up\n", early_rank);
    return 3;
  }
  auto space = tessera::DistArray<int64_t, 1>::dense(ctx, {8});
  for (int i = 0; i < 1000; ++i) {
    tessera::parallel_for(space, [&](const tessera::Key<1>& k, int64_t&) { counts.add(k[0], 1); });
  }
  std::printf("ps_wait_worker: worker %d finished\n", ctx.job().rank);
  return 0;
}
