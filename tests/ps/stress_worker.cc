// A worker process for the multi-process BSP test: `threads` threads each add to many cells
// every clock; after each clock every thread reads every row and checks that it holds exactly
// the sum of all increments of all workers from earlier clocks. Exits 0 when every read was
// exact, 1 (with the first mismatch on stderr) otherwise.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <barrier>
#include <thread>

#include "tessera/client/client.h"
#include "tessera/common/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"parameter-server stress worker"};
  tessera::ClientOptions options;
  int workers = 4, clocks = 5, incs = 25000;
  uint64_t rows = 1000;
  uint32_t width = 10;
  app.add_option("--coordinator", options.coordinator)->required();
  app.add_option("--rank", options.rank)->required();
  app.add_option("--secret", options.secret);
  app.add_option("--threads", options.num_threads);
  app.add_option("--workers", workers);
  app.add_option("--clocks", clocks);
  app.add_option("--incs-per-clock", incs, "increments per thread per clock");
  app.add_option("--rows", rows);
  app.add_option("--width", width);
  CLI11_PARSE(app, argc, argv);
  (void)tessera::SetLogLevel("warn");

  zmq::context_t context;
  tessera::Client client(options, context);
  if (auto s = client.Start(); !s.ok()) {
    spdlog::error("worker {}: {}", options.rank, s.ToString());
    return 1;
  }
  tessera::TableSpec spec;
  spec.id = 1;
  spec.name = "stress";
  spec.value_type = tessera::ValueType::kInt64;
  spec.num_rows = rows;
  spec.width = width;
  if (auto s = client.CreateTable(spec); !s.ok()) {
    spdlog::error("worker {}: {}", options.rank, s.ToString());
    return 1;
  }
  const uint64_t cells = rows * width;
  // Thread t of worker w adds (w + 1) to cells (i * 7 + t) mod cells, i < incs. The expected
  // value of a cell after clock c is c times the sum over all workers and threads.
  std::vector<int64_t> expected(cells, 0);
  for (int w = 0; w < workers; ++w) {
    for (int t = 0; t < options.num_threads; ++t) {
      for (uint64_t i = 0; i < static_cast<uint64_t>(incs); ++i)
        expected[(i * 7 + t) % cells] += w + 1;
    }
  }

  std::atomic<bool> failed{false};
  std::barrier sync(options.num_threads);
  auto body = [&](int t) {
    std::vector<int64_t> row;
    for (int c = 0; c <= clocks; ++c) {
      // Everyone reads only after every worker finished clock c-1, and writes only after every
      // worker finished reading: so the values are exactly those of clocks < c.
      if (t == 0 && !client.Barrier().ok()) failed = true;
      sync.arrive_and_wait();
      for (uint64_t r = 0; r < rows && !failed; ++r) {
        if (auto s = client.Get<int64_t>(t, 1, r, &row); !s.ok()) {
          spdlog::error("worker {} thread {}: {}", options.rank, t, s.ToString());
          failed = true;
          break;
        }
        for (uint32_t j = 0; j < width; ++j) {
          if (row[j] != c * expected[r * width + j]) {
            spdlog::error("worker {} thread {} clock {}: cell ({}, {}) = {}, expected {}",
                          options.rank, t, c, r, j, row[j], c * expected[r * width + j]);
            failed = true;
            break;
          }
        }
      }
      sync.arrive_and_wait();
      if (t == 0 && !client.Barrier().ok()) failed = true;
      sync.arrive_and_wait();
      if (c == clocks || failed) break;
      for (uint64_t i = 0; i < static_cast<uint64_t>(incs); ++i) {
        uint64_t cell = (i * 7 + t) % cells;
        if (!client
                 .Inc<int64_t>(1, cell / width, static_cast<uint32_t>(cell % width),
                               options.rank + 1)
                 .ok()) {
          failed = true;
          break;
        }
      }
      if (!client.Clock(t).ok()) failed = true;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < options.num_threads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
  (void)client.Leave();
  return failed ? 1 : 0;
}
