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
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "tessera/client/client.h"
#include "tessera/common/logging.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"

namespace {

using Clock = std::chrono::steady_clock;

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
  // The job secret: with one, every connection runs CURVE (docs/operations.md, "Security").
  std::string secret;
};

// The get patterns have one ceiling: the bare message pattern has no cache to bypass and no
// table whose rows were written.
bool IsGet(const std::string& pattern) {
  return pattern == "get" || pattern == "get-uncached" || pattern == "get-written";
}

// Children report "<rows> <seconds>" through a pipe. A run whose every process exited cleanly
// and reported is `ok`; any other run's numbers would be wrong (a missing client's rows not
// counted), so it is never printed as a result.
struct Report {
  uint64_t rows = 0;
  double seconds = 0;
  bool ok = false;
  // CPU seconds (user + system) of the run's client processes, and of its others (servers,
  // coordinator), start-up included: what each exited child used, from wait4.
  double client_cpu = 0;
  double other_cpu = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0; }
};

int ReadPipeReport(int fd, Report* r) {
  char buf[128] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  if (n <= 0) return -1;
  return std::sscanf(buf, "%lu %lf", &r->rows, &r->seconds) == 2 ? 0 : -1;
}

// Sums the clients' rows; the job took as long as its slowest client. Closes the pipes. Not
// `ok` if a client reported nothing.
Report CollectReports(const std::vector<int>& pipes) {
  Report total;
  total.ok = true;
  for (int fd : pipes) {
    Report r;
    if (ReadPipeReport(fd, &r) == 0) {
      total.rows += r.rows;
      total.seconds = std::max(total.seconds, r.seconds);
    } else {
      total.ok = false;
    }
    close(fd);
  }
  return total;
}

void WriteReport(int fd, uint64_t rows, double seconds) {
  std::string s = fmt::format("{} {}\n", rows, seconds);
  [[maybe_unused]] ssize_t n = write(fd, s.data(), s.size());
}

// Runs `child` in a new process, on CPU `cpu` alone unless it is -1.
template <typename F>
pid_t Fork(int cpu, F child) {
  pid_t pid = fork();
  if (pid == 0) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        std::fprintf(stderr, "ps_bench: cannot pin a process to CPU %d: %s\n", cpu,
                     std::strerror(errno));
        _exit(1);
      }
    }
    int rc = child();
    std::fflush(nullptr);
    _exit(rc);
  }
  return pid;
}

double CpuSeconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Whether every process exited with status 0; adds their CPU seconds to `cpu` (if not null).
bool WaitAll(const std::vector<pid_t>& pids, double* cpu = nullptr) {
  bool all_ok = true;
  for (pid_t p : pids) {
    int status = 0;
    if (p <= 0) {  // fork failed
      all_ok = false;
      continue;
    }
    rusage u{};
    if (wait4(p, &status, 0, &u) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      all_ok = false;
    if (cpu != nullptr) *cpu += CpuSeconds(u);
  }
  return all_ok;
}

// Stops the processes of a run that cannot go on.
void KillAll(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    if (p > 0) kill(p, SIGKILL);
  }
  (void)WaitAll(pids);
}

// Gives up a run that could not make a pipe for its next client: stops its processes and closes
// the report pipes made so far.
void AbandonRun(const std::vector<pid_t>& clients, const std::vector<pid_t>& others,
                const std::vector<int>& pipes) {
  std::perror("ps_bench: pipe");
  KillAll(clients);
  KillAll(others);
  for (int fd : pipes) close(fd);
}

// Waits for a run's clients, then for its other processes (coordinator, servers), and returns
// whether all exited with status 0. The first process to fail stops the run: the others would
// wait for it for good (at a barrier, or for its leaving). Only a run's processes are children
// of this process while it runs. Adds the clients' CPU seconds and the others' to `report`.
bool WaitRun(std::vector<pid_t> clients, std::vector<pid_t> others, Report* report) {
  auto stop = [&] {
    KillAll(clients);
    KillAll(others);
    return false;
  };
  for (pid_t p : clients) {
    if (p <= 0) return stop();  // fork failed
  }
  while (!clients.empty()) {
    int status = 0;
    rusage u{};
    const pid_t p = wait4(-1, &status, 0, &u);
    if (p < 0) return stop();
    const bool was_client = std::erase(clients, p) > 0;
    (was_client ? report->client_cpu : report->other_cpu) += CpuSeconds(u);
    std::erase(others, p);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return stop();
  }
  return WaitAll(others, &report->other_cpu);
}

// A run's result once its processes are done: the clients' reports (each written before its
// client exits, so the pipes are read after the waits), ok only if every process exited cleanly
// and every client reported, with the run's CPU seconds (WaitRun).
Report FinishRun(const std::vector<pid_t>& clients, const std::vector<pid_t>& others,
                 const std::vector<int>& pipes) {
  Report cpu;
  const bool run_ok = WaitRun(clients, others, &cpu);
  Report total = CollectReports(pipes);
  total.ok = total.ok && run_ok;
  total.client_cpu = cpu.client_cpu;
  total.other_cpu = cpu.other_cpu;
  return total;
}

std::string TempEndpointFile() {
  return fmt::format("/tmp/tessera-bench-{}-{}", getpid(), Clock::now().time_since_epoch().count());
}

std::string WaitForFile(const std::string& path) {
  for (int i = 0; i < 2000; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[256] = {};
      bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
      std::fclose(f);
      std::string s(buf);
      while (!s.empty() && (s.back() == '\n')) s.pop_back();
      if (ok && !s.empty()) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

void PublishFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  std::fprintf(f, "%s\n", text.c_str());
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

// The CPU time (us per row of `rows`) of each thread of this process so far, by name, from
// /proc/self/task/*/schedstat: which of a process's threads (a client's caller, ZeroMQ's I/O
// thread, Tessera's I/O thread or server loop) costs what. Threads that have ended (a server's
// loop, by the time it is done) are summed as "ended": the process's CPU time less its live
// threads'.
std::string ThreadsPerRow(uint64_t rows) {
  auto per_row = [rows](double ns) {
    return rows > 0 ? ns / 1e3 / static_cast<double>(rows) : 0.0;
  };
  std::string out;
  double live_ns = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm"), sched(task.path() / "schedstat");
    std::string name;
    double ns = 0;
    if (!std::getline(comm, name) || !(sched >> ns)) continue;
    live_ns += ns;
    out += fmt::format(" {} {:.3f}", name, per_row(ns));
  }
  timespec process{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &process);
  const double process_ns =
      static_cast<double>(process.tv_sec) * 1e9 + static_cast<double>(process.tv_nsec);
  out += fmt::format(" ended {:.3f}", per_row(std::max(0.0, process_ns - live_ns)));
  return out;
}

// ---- Tessera ----

// CPU time of the calling thread: user and system.
struct ThreadCpu {
  double user = 0;
  double system = 0;
};
ThreadCpu ThreadCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return {secs(ru.ru_utime), secs(ru.ru_stime)};
}
// The thread CPU (us) per row of `rows` moved between `start` and `end`.
ThreadCpu PerRow(const ThreadCpu& start, const ThreadCpu& end, uint64_t rows) {
  if (rows == 0) return {};
  const double per_row = 1e6 / static_cast<double>(rows);
  return {(end.user - start.user) * per_row, (end.system - start.system) * per_row};
}

Report RunTessera(const Config& cfg) {
  std::string coord_file = TempEndpointFile();
  std::vector<pid_t> nodes, clients;
  std::vector<int> pipes;
  nodes.push_back(Fork(cfg.server_cpu, [&] {
    zmq::context_t ctx;
    tessera::CoordinatorOptions o;
    o.num_servers = cfg.servers;
    o.num_workers = cfg.clients;
    o.secret = cfg.secret;
    tessera::Coordinator c(o, ctx);
    if (!c.Start().ok()) return 1;
    PublishFile(coord_file, c.endpoint());
    c.WaitUntilDone();
    return 0;
  }));
  std::string coordinator = WaitForFile(coord_file);
  for (int s = 0; s < cfg.servers; ++s) {
    nodes.push_back(Fork(cfg.server_cpu, [&, s] {
      zmq::context_t ctx;
      tessera::ServerOptions o;
      o.rank = s;
      o.coordinator = coordinator;
      o.secret = cfg.secret;
      tessera::Server server(o, ctx);
      if (!server.Start().ok()) return 1;
      server.WaitUntilDone();
      if (cfg.client_stats) {
        std::fprintf(stderr, "server %d threads, us per row of the run since start:%s\n", s,
                     ThreadsPerRow(cfg.clients * cfg.rows_per_client).c_str());
      }
      return 0;
    }));
  }
  for (int w = 0; w < cfg.clients; ++w) {
    int fds[2];
    if (pipe(fds) != 0) {
      AbandonRun(clients, nodes, pipes);
      return {};
    }
    pipes.push_back(fds[0]);
    clients.push_back(Fork(cfg.client_cpu, [&, w, wfd = fds[1]] {
      zmq::context_t ctx;
      tessera::ClientOptions o;
      o.rank = w;
      o.coordinator = coordinator;
      o.cache_rows = cfg.cache_rows;
      o.secret = cfg.secret;
      tessera::Client client(o, ctx);
      if (!client.Start().ok()) return 1;
      tessera::TableSpec spec;
      spec.id = 1;
      spec.name = "bench";
      spec.value_type = tessera::ValueType::kFloat32;
      spec.num_rows = cfg.rows_per_client * cfg.clients + 1;
      spec.width = cfg.width;
      spec.staleness = 0;
      if (!client.CreateTable(spec).ok()) return 1;
      std::vector<float> delta(cfg.width, 1.0f), row;
      const tessera::RowId base = cfg.rows_per_client * w;
      // Get patterns: batch b is rows [b * batch, (b + 1) * batch) of this client's range.
      const uint64_t batches = (cfg.rows_per_client + cfg.batch - 1) / cfg.batch;
      // Filled in place: the ceiling's loop allocates nothing per batch either.
      std::vector<tessera::RowId> ids_scratch;
      auto batch_ids = [&](uint64_t b) -> const std::vector<tessera::RowId>& {
        ids_scratch.clear();
        for (uint64_t r = b * cfg.batch;
             r < std::min<uint64_t>((b + 1) * cfg.batch, cfg.rows_per_client); ++r) {
          ids_scratch.push_back(base + r);
        }
        return ids_scratch;
      };
      if (cfg.pattern == "get-written") {
        // Untimed: write every row this client reads, a batch per clock, and wait until the
        // servers have applied them (a staleness-0 read of a row nobody reads in the timed part;
        // its server has then applied every earlier clock, and so, but for the last clocks'
        // batches in flight to another server, have the others).
        const std::vector<float> deltas(static_cast<size_t>(cfg.batch) * cfg.width, 1.0f);
        for (uint64_t b = 0; b < batches; ++b) {
          const std::vector<tessera::RowId>& ids = batch_ids(b);
          std::span<const float> d(deltas.data(), ids.size() * cfg.width);
          if (!client.IncRows<float>(1, ids, d).ok() || !client.Clock(0).ok()) return 1;
        }
        if (!client.Get<float>(0, 1, spec.num_rows - 1, &row).ok()) return 1;
      }
      if (!client.Barrier().ok()) return 1;
      auto start = Clock::now();
      const ThreadCpu start_cpu = ThreadCpuSeconds();
      uint64_t moved = 0;
      if (cfg.pattern == "inc") {
        const std::vector<float> deltas(static_cast<size_t>(cfg.batch) * cfg.width, 1.0f);
        std::vector<tessera::RowId> ids;
        for (uint64_t i = 0; i < cfg.rows_per_client; i += cfg.batch) {
          ids.clear();
          for (uint64_t j = i; j < std::min<uint64_t>(i + cfg.batch, cfg.rows_per_client); ++j)
            ids.push_back(base + j % cfg.working_set);
          if (cfg.per_row_inc) {
            for (tessera::RowId id : ids) {
              if (!client.IncRow<float>(1, id, delta).ok()) return 1;
            }
          } else {
            std::span<const float> d(deltas.data(), ids.size() * cfg.width);
            if (!client.IncRows<float>(1, ids, d).ok()) return 1;
          }
          moved += ids.size();
          if (!client.Clock(0).ok()) return 1;
        }
        // Applied everywhere once a staleness-0 read at the final clock is answered.
        if (!client.Get<float>(0, 1, base, &row).ok()) return 1;
      } else if (cfg.pattern == "get-uncached") {
        // A ring of `window` buffers, each with a read in flight, the oldest waited for first.
        const size_t window = static_cast<size_t>(cfg.window);
        std::vector<std::vector<float>> bufs(
            window, std::vector<float>(static_cast<size_t>(cfg.batch) * cfg.width));
        std::vector<tessera::ReadTicket> tickets(window);
        std::vector<size_t> sizes(window, 0);
        auto wait = [&](size_t slot) {
          if (!client.WaitUncachedRead(tickets[slot]).ok()) return false;
          moved += sizes[slot];
          return true;
        };
        uint64_t in_flight = 0;
        for (uint64_t b = 0; b < batches; ++b) {
          const size_t slot = b % window;
          if (in_flight == window) {
            if (!wait(slot)) return 1;
            --in_flight;
          }
          const std::vector<tessera::RowId>& ids = batch_ids(b);
          sizes[slot] = ids.size();
          auto t = client.StartUncachedRead<float>(
              0, 1, ids, std::span<float>(bufs[slot].data(), ids.size() * cfg.width));
          if (!t.ok()) return 1;
          tickets[slot] = *t;
          ++in_flight;
        }
        for (uint64_t k = batches - in_flight; k < batches; ++k) {
          if (!wait(k % window)) return 1;
        }
      } else {
        for (uint64_t b = 0; b < std::min<uint64_t>(cfg.window, batches); ++b) {
          if (!client.Prefetch(0, 1, batch_ids(b)).ok()) return 1;
        }
        std::vector<float> rows_out(static_cast<size_t>(cfg.batch) * cfg.width);
        // get-written reads what it wrote (each cell 1): a row that is not is a failed run, so
        // the pattern cannot measure reads of anything else. One cell per row, just copied.
        const bool check = cfg.pattern == "get-written";
        for (uint64_t b = 0; b < batches; ++b) {
          const std::vector<tessera::RowId>& ids = batch_ids(b);
          if (cfg.per_row_get) {
            for (tessera::RowId id : ids) {
              if (!client.Get<float>(0, 1, id, &row).ok()) return 1;
              if (check && row[0] != 1.0f) return 1;
            }
          } else {
            std::span<float> out(rows_out.data(), ids.size() * cfg.width);
            if (!client.GetRows<float>(0, 1, ids, out).ok()) return 1;
            for (size_t i = 0; check && i < ids.size(); ++i) {
              if (out[i * cfg.width] != 1.0f) return 1;
            }
          }
          moved += ids.size();
          // The next request once this batch is read, as the ceiling sends its next once it has
          // received one: `window` batches in flight on both sides, never one more.
          if (b + cfg.window < batches && !client.Prefetch(0, 1, batch_ids(b + cfg.window)).ok())
            return 1;
        }
      }
      double secs = std::chrono::duration<double>(Clock::now() - start).count();
      const ThreadCpu cpu = PerRow(start_cpu, ThreadCpuSeconds(), moved);
      WriteReport(wfd, moved, secs);
      if (cfg.client_stats) {
        tessera::ClientStats st = client.stats();
        std::fprintf(stderr,
                     "client %d: rows requested %lu, hits %lu, cold misses %lu, stale waits %lu, "
                     "rows received %lu, evictions %lu, messages sent %lu, flow-control waits "
                     "%lu, calling thread us per row %.3f user %.3f system\n",
                     w, st.get_requests, st.cache_hits, st.cold_misses, st.stale_waits,
                     st.rows_received, st.evictions, st.messages_sent, st.flow_control_waits,
                     cpu.user, cpu.system);
        std::fprintf(stderr, "client %d threads, us per row since start:%s\n", w,
                     ThreadsPerRow(moved).c_str());
      }
      (void)client.Leave();
      return 0;
    }));
    close(fds[1]);
  }
  const Report total = FinishRun(clients, nodes, pipes);
  std::remove(coord_file.c_str());
  return total;
}

// ---- bare ZeroMQ ceiling ----

// Reads one float per cache line of a received payload, so the ceiling's receiver brings the
// bytes it gets into its cache as a real reader (and Tessera) must: the server of inc, the
// client of get.
void TouchPayload(const zmq::message_t& msg) {
  const float* p = static_cast<const float*>(msg.data());
  volatile float sink = 0;
  for (size_t i = 0; i < msg.size() / sizeof(float); i += 16) sink = sink + p[i];
}

Report RunCeiling(const Config& cfg) {
  std::vector<std::string> files;
  std::vector<pid_t> servers, clients;
  std::vector<int> pipes;
  const size_t row_bytes = cfg.width * sizeof(float);
  for (int s = 0; s < cfg.servers; ++s) {
    files.push_back(TempEndpointFile() + "-" + std::to_string(s));
    servers.push_back(Fork(cfg.server_cpu, [&, s] {
      zmq::context_t ctx;
      zmq::socket_t sock(ctx, zmq::socket_type::router);
      sock.set(zmq::sockopt::sndhwm, 0);
      sock.set(zmq::sockopt::rcvhwm, 0);
      sock.bind("tcp://127.0.0.1:*");
      PublishFile(files[s], sock.get(zmq::sockopt::last_endpoint));
      int done = 0;
      while (done < cfg.clients) {
        zmq::message_t id, msg;
        (void)sock.recv(id);
        (void)sock.recv(msg);
        if (msg.size() == 1) {  // a client finished: acknowledge so it can stop its timer
          ++done;
          sock.send(id, zmq::send_flags::sndmore);
          sock.send(zmq::str_buffer("k"));
        } else if (IsGet(cfg.pattern)) {
          // Request: row ids; reply: that many rows of payload.
          size_t n = msg.size() / sizeof(uint64_t);
          zmq::message_t reply(n * row_bytes);
          std::memset(reply.data(), 0, reply.size());
          sock.send(id, zmq::send_flags::sndmore);
          sock.send(reply, zmq::send_flags::none);
        } else {
          TouchPayload(msg);
        }
      }
      if (cfg.client_stats) {
        std::fprintf(stderr, "ceiling server %d threads, us per row of the run since start:%s\n", s,
                     ThreadsPerRow(cfg.clients * cfg.rows_per_client).c_str());
      }
      return 0;
    }));
  }
  std::vector<std::string> endpoints;
  for (auto& f : files) endpoints.push_back(WaitForFile(f));
  for (int w = 0; w < cfg.clients; ++w) {
    int fds[2];
    if (pipe(fds) != 0) {
      AbandonRun(clients, servers, pipes);
      return {};
    }
    pipes.push_back(fds[0]);
    clients.push_back(Fork(cfg.client_cpu, [&, wfd = fds[1]] {
      zmq::context_t ctx;
      std::vector<zmq::socket_t> socks;
      for (auto& ep : endpoints) {
        socks.emplace_back(ctx, zmq::socket_type::dealer);
        socks.back().set(zmq::sockopt::sndhwm, 0);
        socks.back().connect(ep);
      }
      auto start = Clock::now();
      const ThreadCpu start_cpu = ThreadCpuSeconds();
      uint64_t moved = 0;
      const size_t per_server = std::max<size_t>(1, cfg.batch / cfg.servers);
      uint64_t in_flight = 0;
      for (uint64_t i = 0; i < cfg.rows_per_client; i += cfg.batch) {
        size_t n = std::min<uint64_t>(cfg.batch, cfg.rows_per_client - i);
        for (auto& s : socks) {
          size_t k = std::min(per_server, n);
          if (IsGet(cfg.pattern)) {
            zmq::message_t req(k * sizeof(uint64_t));
            s.send(req, zmq::send_flags::none);
          } else {
            zmq::message_t payload(k * row_bytes);
            std::memset(payload.data(), 1, payload.size());
            s.send(payload, zmq::send_flags::none);
          }
        }
        if (IsGet(cfg.pattern) && ++in_flight == static_cast<uint64_t>(cfg.window)) {
          for (auto& s : socks) {
            zmq::message_t reply;
            (void)s.recv(reply);
            TouchPayload(reply);
          }
          --in_flight;
        }
        moved += n;
      }
      for (; in_flight > 0; --in_flight) {
        for (auto& s : socks) {
          zmq::message_t reply;
          (void)s.recv(reply);
          TouchPayload(reply);
        }
      }
      for (auto& s : socks) {
        s.send(zmq::str_buffer("d"));
        zmq::message_t ack;
        (void)s.recv(ack);
      }
      double secs = std::chrono::duration<double>(Clock::now() - start).count();
      const ThreadCpu cpu = PerRow(start_cpu, ThreadCpuSeconds(), moved);
      WriteReport(wfd, moved, secs);
      if (cfg.client_stats) {
        std::fprintf(stderr, "ceiling client: calling thread us per row %.3f user %.3f system\n",
                     cpu.user, cpu.system);
        std::fprintf(stderr, "ceiling client threads, us per row since start:%s\n",
                     ThreadsPerRow(moved).c_str());
      }
      return 0;
    }));
    close(fds[1]);
  }
  const Report total = FinishRun(clients, servers, pipes);
  for (auto& f : files) std::remove(f.c_str());
  return total;
}

// The batches in flight of a get configuration; "-" for inc, which has no window.
std::string WindowColumn(const Config& cfg) {
  return IsGet(cfg.pattern) ? std::to_string(cfg.window) : "-";
}

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
  app.add_option("--cache-rows", cache_rows,
                 "the clients' cache capacity in rows per table (0: no limit)");
  std::string secret;
  app.add_option("--secret", secret,
                 "job secret for Tessera's processes: every connection runs CURVE (default: none)");
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
