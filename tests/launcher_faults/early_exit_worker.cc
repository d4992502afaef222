// A program whose worker 0 returns from main at once, with status 3, while every other worker
// goes on to a reduction that needs worker 0: the job must stop at once (the others learn that
// worker 0 left), not after the peer mesh's 10-minute timeout, with worker 0's status.
#include <cstdio>

#include "tessera/tessera.h"

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  if (ctx.job().rank == 0) {
    std::fprintf(stderr, "early_exit_worker: worker 0 gives up\n");
    return 3;
  }
  tessera::Result<double> sum = tessera::SumOverWorkers(ctx, 1.0);  // worker 0 never joins
  if (!sum.ok()) {
    std::fprintf(stderr, "early_exit_worker: %s\n", sum.status().ToString().c_str());
    return tessera::kExitAnotherWorkerFailed;  // the cause is worker 0's: let it be reported
  }
  return 0;
}
