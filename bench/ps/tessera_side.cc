#include "bench/ps/tessera_side.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "bench/ps/thread_cpu.h"
#include "tessera/client/client.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"

namespace tessera::bench {

using Clock = std::chrono::steady_clock;

namespace {

// A forked process's failed call: says which and why on stderr, for the run's failure message.
int Failed(const char* call, const tessera::Status& status) {
  std::fprintf(stderr, "ps_bench (pid %d): %s failed: %s\n", static_cast<int>(getpid()), call,
               status.ToString().c_str());
  return 1;
}

}  // namespace

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
    if (tessera::Status st = c.Start(); !st.ok()) return Failed("Start", st);
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
      if (tessera::Status st = server.Start(); !st.ok()) return Failed("Start", st);
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
      if (tessera::Status st = client.Start(); !st.ok()) return Failed("Start", st);
      tessera::TableSpec spec;
      spec.id = 1;
      spec.name = "bench";
      spec.value_type = tessera::ValueType::kFloat32;
      spec.num_rows = cfg.rows_per_client * cfg.clients + 1;
      spec.width = cfg.width;
      spec.staleness = 0;
      if (tessera::Status st = client.CreateTable(spec); !st.ok()) return Failed("CreateTable", st);
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
          if (tessera::Status st = client.IncRows<float>(1, ids, d); !st.ok()) {
            return Failed("IncRows", st);
          }
          if (tessera::Status st = client.Clock(0); !st.ok()) return Failed("Clock", st);
        }
        if (tessera::Status st = client.Get<float>(0, 1, spec.num_rows - 1, &row); !st.ok())
          return Failed("Get", st);
      }
      if (tessera::Status st = client.Barrier(); !st.ok()) return Failed("Barrier", st);
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
              if (tessera::Status st = client.IncRow<float>(1, id, delta); !st.ok())
                return Failed("IncRow", st);
            }
          } else {
            std::span<const float> d(deltas.data(), ids.size() * cfg.width);
            if (tessera::Status st = client.IncRows<float>(1, ids, d); !st.ok())
              return Failed("IncRows", st);
          }
          moved += ids.size();
          if (tessera::Status st = client.Clock(0); !st.ok()) return Failed("Clock", st);
        }
        // Applied everywhere once a staleness-0 read at the final clock is answered.
        if (tessera::Status st = client.Get<float>(0, 1, base, &row); !st.ok())
          return Failed("Get", st);
      } else if (cfg.pattern == "get-uncached") {
        // A ring of `window` buffers, each with a read in flight, the oldest waited for first.
        const size_t window = static_cast<size_t>(cfg.window);
        std::vector<std::vector<float>> bufs(
            window, std::vector<float>(static_cast<size_t>(cfg.batch) * cfg.width));
        std::vector<tessera::ReadTicket> tickets(window);
        std::vector<size_t> sizes(window, 0);
        auto wait = [&](size_t slot) {
          if (tessera::Status st = client.WaitUncachedRead(tickets[slot]); !st.ok()) {
            Failed("WaitUncachedRead", st);
            return false;
          }
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
          if (!t.ok()) return Failed("StartUncachedRead", t.status());
          tickets[slot] = *t;
          ++in_flight;
        }
        for (uint64_t k = batches - in_flight; k < batches; ++k) {
          if (!wait(k % window)) return 1;
        }
      } else {
        for (uint64_t b = 0; b < std::min<uint64_t>(cfg.window, batches); ++b) {
          if (tessera::Status st = client.Prefetch(0, 1, batch_ids(b)); !st.ok())
            return Failed("Prefetch", st);
        }
        std::vector<float> rows_out(static_cast<size_t>(cfg.batch) * cfg.width);
        // get-written reads what it wrote (each cell 1): a row that is not is a failed run, so
        // the pattern cannot measure reads of anything else. One cell per row, just copied.
        const bool check = cfg.pattern == "get-written";
        for (uint64_t b = 0; b < batches; ++b) {
          const std::vector<tessera::RowId>& ids = batch_ids(b);
          if (cfg.per_row_get) {
            for (tessera::RowId id : ids) {
              if (tessera::Status st = client.Get<float>(0, 1, id, &row); !st.ok())
                return Failed("Get", st);
              if (check && row[0] != 1.0f) return 1;
            }
          } else {
            std::span<float> out(rows_out.data(), ids.size() * cfg.width);
            if (tessera::Status st = client.GetRows<float>(0, 1, ids, out); !st.ok())
              return Failed("GetRows", st);
            for (size_t i = 0; check && i < ids.size(); ++i) {
              if (out[i * cfg.width] != 1.0f) return 1;
            }
          }
          moved += ids.size();
          // The next request once this batch is read, as the ceiling sends its next once it has
          // received one: `window` batches in flight on both sides, never one more.
          if (b + cfg.window < batches) {
            if (tessera::Status st = client.Prefetch(0, 1, batch_ids(b + cfg.window)); !st.ok()) {
              return Failed("Prefetch", st);
            }
          }
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

}  // namespace tessera::bench
