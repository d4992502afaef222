#include "bench/ps/zmq_ceiling.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "bench/ps/thread_cpu.h"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Reads one float per cache line of a received payload, so the ceiling's receiver brings the
// bytes it gets into its cache as a real reader (and Tessera) must: the server of inc, the
// client of get.
void TouchPayload(const zmq::message_t& msg) {
  const float* p = static_cast<const float*>(msg.data());
  volatile float sink = 0;
  for (size_t i = 0; i < msg.size() / sizeof(float); i += 16) sink = sink + p[i];
}

}  // namespace

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

}  // namespace tessera::bench
