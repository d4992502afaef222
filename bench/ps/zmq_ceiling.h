// The ceiling of ps_bench: the same message pattern as the Tessera side (tessera_side.h) with
// bare ZeroMQ DEALER/ROUTER sockets and raw float frames: no tables, no Cap'n Proto, no cache.
// Its receivers read one float per cache line of what they get (the inc server, the get client),
// as any program that uses the rows must. The get patterns share one ceiling (IsGet).
#ifndef TESSERA_BENCH_PS_ZMQ_CEILING_H_
#define TESSERA_BENCH_PS_ZMQ_CEILING_H_

#include "bench/ps/config.h"
#include "bench/ps/run_processes.h"

namespace tessera::bench {

// Forks the run's server and client processes, waits for all of them and returns what the
// clients reported (not `ok` if any process failed).
Report RunCeiling(const Config& cfg);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_PS_ZMQ_CEILING_H_
