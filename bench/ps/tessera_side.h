// The Tessera side of ps_bench: one run of a configuration with real processes (a coordinator,
// `servers` servers, `clients` clients) talking tcp over 127.0.0.1 through tessera::Client and
// tessera::Server, each client moving `rows_per_client` rows of one float table in the pattern
// the configuration names (ps_bench.cc describes the patterns).
#ifndef TESSERA_BENCH_PS_TESSERA_SIDE_H_
#define TESSERA_BENCH_PS_TESSERA_SIDE_H_

#include "bench/ps/config.h"
#include "bench/ps/run_processes.h"

namespace tessera::bench {

// Forks the run's processes, waits for all of them and returns what the clients reported (not
// `ok` if any process failed). With cfg.client_stats, each client's statistics and every
// process's CPU per thread go to stderr.
Report RunTessera(const Config& cfg);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_PS_TESSERA_SIDE_H_
