// Parameter-server throughput on loopback, beside the same message pattern over bare ZeroMQ.
//
// For each configuration (pattern, row width, client processes, server processes) it forks real
// processes talking tcp over 127.0.0.1 and reports rows/s and MB/s of row payload:
//   inc  - each client adds whole rows to `batch` distinct rows per clock (one IncRows call, or
//          IncRow per row with --per-row-inc), cycling over a working set of rows as training
//          does, so each clock sends one coalesced update batch per server; timed until the
//          servers have applied everything (a staleness-0 read after the last clock).
//   get  - each client reads batches of `batch` rows it has not read before: one request and one
//          reply per server per batch, with `window` batches in flight (GetRows of a batch, or
//          Get of each row with --per-row-get, then Prefetch of the batch `window` ahead), as a
//          loader that reads ahead does. The ceiling keeps as many in flight (it sends a request
//          once it has received a reply), and by default (16) about as many as its rate stops
//          growing with (bench/README.md, "The ceiling by window"): with a few, both sides
//          wait on round trips, and one batch more or less moves Tessera's rate by up to a
//          quarter.
//   get-uncached - the same reads with StartUncachedRead / WaitUncachedRead: each reply goes
//          straight into the reader's buffer, past the process cache; `window` reads in flight,
//          as the ceiling has.
//   get-written - the reads of get, of rows the client wrote (one IncRows and a clock per
//          batch) before the timed part: the servers answer stored rows and subscribe the
//          reader through each row's own entry, as they do for a trained model's rows, where get
//          reads rows nobody wrote.
// The ceiling runs the same pattern with bare ZeroMQ DEALER/ROUTER sockets and raw float frames:
// no tables, no Cap'n Proto, no cache; its receivers read one float per cache line of what they
// get (the inc server, the get client), as any program that uses the rows must.
//
// With --rounds N every configuration runs N times (round after round over all of them) and a
// table of medians follows. A run in which any process fails stops the benchmark with an error:
// its numbers would count only the clients that reported.
//
// With --pin split the client processes run on one CPU and the servers on another, which takes
// the scheduler's placement (and its swings from run to run) out of what is measured.
//
//   ps_bench [--widths 16,128,1024] [--clients 1,2,4] [--servers 1,2] [--patterns ...]
//            [--window 16] [--bytes-per-client N] [--cache-rows N] [--rounds N]
//            [--pin none|split]
#include <fmt/format.h>
//
// This file is the runner: flags, the configurations, the rounds and the tables. The two sides
// are tessera_side.h and zmq_ceiling.h; run_processes.h forks and waits for a run's processes.
#include <fmt/format.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/ps/config.h"
#include "bench/ps/run_processes.h"
#include "bench/ps/tessera_side.h"
#include "bench/ps/zmq_ceiling.h"
#include "tessera/common/logging.h"

namespace {

using tessera::bench::Config;
using tessera::bench::IsGet;
using tessera::bench::Report;
using tessera::bench::RunCeiling;
using tessera::bench::RunTessera;
using tessera::bench::WindowColumn;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Per configuration: the medians of both sides over the rounds and their ratio, the median of
// the per-round ratios, and every round's ratio (how far one round can be trusted).
void PrintSummary(const std::vector<Config>& configs,
                  const std::vector<std::vector<std::pair<double, double>>>& rates) {
  std::printf(
      "\n| pattern | width | clients | servers | window | Tessera rows/s (median) | ZeroMQ rows/s "
      "(median) | ratio of medians | median ratio | ratio each round |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < configs.size(); ++i) {
    std::vector<double> ours, ceiling, ratios;
    std::string each;
    for (auto [t, z] : rates[i]) {
      ours.push_back(t);
      ceiling.push_back(z);
      ratios.push_back(t / z);
      each += fmt::format("{}{:.2f}", each.empty() ? "" : " ", t / z);
    }
    const double t = Median(ours), z = Median(ceiling);
    std::printf("| %s | %u | %d | %d | %s | %.0f | %.0f | %.2f | %.2f | %s |\n",
                configs[i].pattern.c_str(), configs[i].width, configs[i].clients,
                configs[i].servers, WindowColumn(configs[i]).c_str(), t, z, t / z, Median(ratios),
                each.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tessera parameter-server throughput vs bare ZeroMQ"};
  std::vector<int> widths{16, 128, 1024}, clients{1, 2, 4}, servers{1, 2};
  std::vector<std::string> patterns{"inc", "get", "get-uncached"};  // get-written on request
  uint64_t row_bytes_budget = 64ull << 20;  // payload each client moves per configuration
  // Each a comma-separated list; every combination runs. Processes are forked per run, so the
  // counts are kept to what one machine can hold.
  app.add_option("--widths", widths, "row widths in floats")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--clients", clients, "client process counts")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  app.add_option("--servers", servers, "server process counts")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  // Checked after parsing, with a message of its own (which pattern, and the ones there are).
  app.add_option("--patterns", patterns, "any of inc, get, get-uncached, get-written")
      ->delimiter(',');
  app.add_option("--bytes-per-client", row_bytes_budget, "row payload each client moves per run");
  uint64_t cache_rows = 0;
  std::string secret;
  app.add_option("--secret", secret,
                 "job secret for Tessera's processes: every connection runs CURVE (default: none)");
  app.add_option("--cache-rows", cache_rows,
                 "the clients' cache capacity in rows per table (0: no limit)");
  bool per_row_get = false;
  app.add_flag("--per-row-get", per_row_get,
               "get: read each row with Get instead of each batch with GetRows");
  bool per_row_inc = false;
  app.add_flag("--per-row-inc", per_row_inc,
               "inc: add each row with IncRow instead of each clock's rows with IncRows");
  std::vector<int> windows{16};
  app.add_option("--window", windows,
                 "get: batches in flight per client, on both sides; a list (4,8,16) runs the get "
                 "patterns once per window")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  bool client_stats = false;
  app.add_flag("--client-stats", client_stats,
               "print each Tessera client's statistics, each client's reading-thread CPU per "
               "row on both sides, and each run's CPU per row over all its processes, to stderr");
  int rounds = 1;
  app.add_option("--rounds", rounds,
                 "runs of every configuration, one round over all of them after another; with "
                 "more than one, a summary of medians follows")
      ->check(CLI::Range(1, 1000));
  std::string pin = "none";
  app.add_option("--pin", pin,
                 "none: the scheduler places every process; split: clients on one CPU, servers "
                 "and the coordinator on another (the first two this process may use; each "
                 "side's threads share its CPU)")
      ->check(CLI::IsMember({"none", "split"}));
  bool skip_ceiling = false, skip_tessera = false;
  app.add_flag("--skip-ceiling", skip_ceiling, "run only Tessera (for profiling)");
  app.add_flag("--skip-tessera", skip_tessera, "run only the ceiling (for profiling)");
  CLI11_PARSE(app, argc, argv);
  (void)tessera::SetLogLevel("warn");

  for (const auto& pattern : patterns) {
    if (pattern != "inc" && !IsGet(pattern)) {
      std::fprintf(stderr, "unknown pattern '%s' (inc, get, get-uncached, get-written)\n",
                   pattern.c_str());
      return 2;
    }
  }
  int client_cpu = -1, server_cpu = -1;
  if (pin == "split") {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
      std::fprintf(stderr, "ps_bench: --pin split: cannot read this process's CPUs: %s\n",
                   std::strerror(errno));
      return 2;
    }
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
    if (cpus.size() < 2) {
      std::fprintf(stderr, "ps_bench: --pin split needs two CPUs; this process may use %d\n",
                   CPU_COUNT(&allowed));
      return 2;
    }
    client_cpu = cpus[0];
    server_cpu = cpus[1];
  }
  // What every configuration shares; the loops fill in the rest.
  Config shared{};
  shared.cache_rows = cache_rows;
  shared.secret = secret;
  shared.per_row_get = per_row_get;
  shared.per_row_inc = per_row_inc;
  shared.client_stats = client_stats;
  shared.client_cpu = client_cpu;
  shared.server_cpu = server_cpu;
  std::vector<Config> configs;
  for (const auto& pattern : patterns) {
    // inc has no window: one run of it, whatever the list.
    const std::vector<int> pattern_windows = IsGet(pattern) ? windows : std::vector<int>{0};
    for (int w : widths) {
      for (int s : servers) {
        for (int c : clients) {
          for (int window : pattern_windows) {
            Config cfg = shared;
            cfg.pattern = pattern;
            cfg.width = static_cast<uint32_t>(w);
            cfg.clients = c;
            cfg.servers = s;
            cfg.rows_per_client = std::max<uint64_t>(1024, row_bytes_budget / (w * sizeof(float)));
            cfg.window = window;
            configs.push_back(cfg);
          }
        }
      }
    }
  }

  std::printf(
      "| pattern | width | clients | servers | window | Tessera rows/s | Tessera MB/s | ZeroMQ "
      "rows/s | ZeroMQ MB/s | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);  // children inherit the stdio buffer; it must be empty when they exit
  // Rounds go over every configuration in turn, so a slow spell of the machine touches all of
  // them rather than all rounds of one.
  std::vector<std::vector<std::pair<double, double>>> rates(configs.size());  // (ours, ceiling)
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      const Config& cfg = configs[i];
      // The side that runs second finds the machine as the first left it (page cache, CPU
      // frequency, the other tenants' load): rounds alternate which side goes first.
      // A skipped side reports nothing and counts as fine.
      Report ceiling{.ok = true}, ours{.ok = true};
      auto run_ceiling = [&] {
        if (!skip_ceiling) ceiling = RunCeiling(cfg);
      };
      auto run_ours = [&] {
        if (!skip_tessera) ours = RunTessera(cfg);
      };
      if (round % 2 == 0) {
        run_ceiling();
        run_ours();
      } else {
        run_ours();
        run_ceiling();
      }
      for (const auto& [side, r] : {std::pair("ZeroMQ", &ceiling), std::pair("Tessera", &ours)}) {
        if (!r->ok) {
          std::fprintf(stderr,
                       "ps_bench: the %s run of %s, %u floats, %d clients x %d servers, window "
                       "%s failed: a process exited with an error or reported nothing\n",
                       side, cfg.pattern.c_str(), cfg.width, cfg.clients, cfg.servers,
                       WindowColumn(cfg).c_str());
          return 1;
        }
      }
      const double mb = cfg.width * sizeof(float) / 1e6;
      std::printf("| %s | %u | %d | %d | %s | %.0f | %.1f | %.0f | %.1f | %.2f |\n",
                  cfg.pattern.c_str(), cfg.width, cfg.clients, cfg.servers,
                  WindowColumn(cfg).c_str(), ours.rate(), ours.rate() * mb, ceiling.rate(),
                  ceiling.rate() * mb,
                  ceiling.rate() > 0 && ours.rate() > 0 ? ours.rate() / ceiling.rate() : 0.0);
      std::fflush(stdout);
      if (cfg.client_stats) {
        // CPU of every process of a run (coordinator, servers, clients; start-up included, and
        // get-written's untimed writes), per row moved.
        auto per_row = [](double cpu, const Report& r) {
          return r.rows > 0 ? cpu * 1e6 / static_cast<double>(r.rows) : 0.0;
        };
        std::fprintf(stderr,
                     "all processes' CPU per row (us): Tessera %.3f (clients %.3f, others %.3f), "
                     "ceiling %.3f (clients %.3f, servers %.3f) (%s, %d x %d, window %s)\n",
                     per_row(ours.client_cpu + ours.other_cpu, ours),
                     per_row(ours.client_cpu, ours), per_row(ours.other_cpu, ours),
                     per_row(ceiling.client_cpu + ceiling.other_cpu, ceiling),
                     per_row(ceiling.client_cpu, ceiling), per_row(ceiling.other_cpu, ceiling),
                     cfg.pattern.c_str(), cfg.clients, cfg.servers, WindowColumn(cfg).c_str());
      }
      rates[i].emplace_back(ours.rate(), ceiling.rate());
    }
  }
  if (rounds > 1 && !skip_tessera && !skip_ceiling) PrintSummary(configs, rates);
  return 0;
}
