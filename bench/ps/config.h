// What one ps_bench run measures: the message pattern, the sizes and the process counts, shared
// by the Tessera side (tessera_side.h) and the bare-ZeroMQ ceiling (zmq_ceiling.h).
#ifndef TESSERA_BENCH_PS_CONFIG_H_
#define TESSERA_BENCH_PS_CONFIG_H_

#include <cstdint>
#include <string>

namespace tessera::bench {

struct Config {
  std::string pattern;  // inc, get, get-uncached or get-written
  uint32_t width = 0;
  int clients = 0;
  int servers = 0;
  uint64_t rows_per_client = 0;  // rows moved by each client in the timed part
  int batch = 64;                // rows per message (per clock for inc)
  uint64_t working_set = 8192;   // inc: distinct rows each client cycles through
  int window = 16;               // get: batches in flight
  uint64_t cache_rows = 0;       // the clients' cache capacity per table (0: no limit)
  bool per_row_get = false;      // get: a Get per row instead of a GetRows per batch
  bool per_row_inc = false;      // inc: an IncRow per row instead of an IncRows per clock
  bool client_stats = false;     // print each Tessera client's statistics to stderr
  // --pin split: the CPU of every client process, and of every server (and the coordinator);
  // -1 leaves a process to the scheduler.
  int client_cpu = -1;
  int server_cpu = -1;
  // The job secret: with one, every connection runs CURVE (docs/security.md).
  std::string secret;
};

// The get patterns have one ceiling: the bare message pattern has no cache to bypass and no
// table whose rows were written.
inline bool IsGet(const std::string& pattern) {
  return pattern == "get" || pattern == "get-uncached" || pattern == "get-written";
}

// The batches in flight of a get configuration; "-" for inc, which has no window.
inline std::string WindowColumn(const Config& cfg) {
  return IsGet(cfg.pattern) ? std::to_string(cfg.window) : "-";
}

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_PS_CONFIG_H_
