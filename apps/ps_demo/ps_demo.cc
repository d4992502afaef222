// ps_demo: data-parallel least-squares regression over the parameter server, the local demo of
// Tessera's parameter server.
//
// Each worker generates its own shard of samples y = <w*, x> + noise and runs minibatch SGD on a
// weight table shared through the servers with bounded staleness (--staleness). Every clock it
// reads the weights, adds its scaled gradient, and clocks. Worker 0 prints the training loss of
// its shard per clock; loss falling toward the noise floor means the workers' updates meet.
//
//   tessera run -w 2 -s 2 -- build/bin/ps_demo --clocks 30      # a real job
//   build/bin/ps_demo --clocks 30                                # alone: a one-process job
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "tessera/client/client.h"
#include "tessera/client/job_environment.h"
#include "tessera/common/logging.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"
#include "tessera/version.h"

namespace {

struct Shard {
  std::vector<std::vector<float>> x;
  std::vector<float> y;
};

Shard MakeShard(int rank, int samples, int dim, float noise) {
  std::mt19937 truth_rng(42);  // the same true weights on every worker
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> truth(dim);
  for (float& w : truth) w = normal(truth_rng);
  std::mt19937 rng(1000 + rank);
  Shard shard;
  for (int i = 0; i < samples; ++i) {
    std::vector<float> x(dim);
    float y = 0;
    for (int j = 0; j < dim; ++j) {
      x[j] = normal(rng);
      y += truth[j] * x[j];
    }
    shard.x.push_back(std::move(x));
    shard.y.push_back(y + noise * normal(rng));
  }
  return shard;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tessera parameter-server demo: data-parallel least squares with SSP"};
  app.set_version_flag("--version", std::string("ps_demo ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();
  int clocks = 30, samples = 20000, dim = 64, batch = 2000, staleness = 1, row_width = 64;
  float lr = 0.3f, noise = 0.1f;
  std::string log_level = "warn";
  app.add_option("--clocks", clocks, "SGD steps (clocks)")->check(CLI::PositiveNumber);
  app.add_option("--samples", samples, "samples per worker")->check(CLI::PositiveNumber);
  app.add_option("--dim", dim, "features")->check(CLI::PositiveNumber);
  app.add_option("--row-width", row_width, "features per table row")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "minibatch per worker per clock")->check(CLI::PositiveNumber);
  app.add_option("--staleness", staleness, "SSP bound of the weight table")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr", lr, "learning rate");
  int print_every = 5;
  app.add_option("--print-every", print_every, "print the loss every N clocks")
      ->check(CLI::PositiveNumber);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off");
  CLI11_PARSE(app, argc, argv);
  if (auto s = tessera::SetLogLevel(log_level); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 2;
  }

  auto job = tessera::JobEnvironmentFromEnv();
  if (!job.ok()) {
    spdlog::error("{}", job.status().ToString());
    return 2;
  }
  zmq::context_t context;
  // Alone: a whole one-worker job inside this process, over inproc://.
  std::unique_ptr<tessera::Coordinator> coordinator;
  std::unique_ptr<tessera::Server> server;
  tessera::ClientOptions options;
  int rank = 0, workers = 1;
  if (job->has_value()) {
    options = (*job)->client;
    rank = (*job)->rank;
    workers = (*job)->num_workers;
  } else {
    tessera::CoordinatorOptions co;
    co.listen = "inproc://ps-demo-coordinator";
    coordinator = std::make_unique<tessera::Coordinator>(co, context);
    tessera::ServerOptions so;
    so.listen = "inproc://ps-demo-server";
    so.coordinator = co.listen;
    server = std::make_unique<tessera::Server>(so, context);
    if (auto s = coordinator->Start(); !s.ok()) return spdlog::error("{}", s.ToString()), 1;
    if (auto s = server->Start(); !s.ok()) return spdlog::error("{}", s.ToString()), 1;
    options.coordinator = co.listen;
  }
  tessera::Client client(options, context);
  if (auto s = client.Start(); !s.ok()) {
    spdlog::error("worker {}: {}", rank, s.ToString());
    return 1;
  }
  tessera::TableSpec weights;
  weights.id = 1;
  weights.name = "weights";
  weights.value_type = tessera::ValueType::kFloat32;
  // The weights as rows of `row_width` features: what a model with many parameters looks like to
  // the parameter server (rows are placed, cached, pushed and prioritized one by one).
  const int rows = (dim + row_width - 1) / row_width;
  weights.num_rows = static_cast<uint64_t>(rows);
  weights.width = static_cast<uint32_t>(row_width);
  weights.staleness = static_cast<uint32_t>(staleness);
  if (auto s = client.CreateTable(weights); !s.ok()) {
    spdlog::error("worker {}: {}", rank, s.ToString());
    return 1;
  }
  Shard shard = MakeShard(rank, samples, dim, noise);
  // Padded to whole rows; the padding features are always 0 in the data.
  std::vector<float> w(static_cast<size_t>(rows) * row_width), grad(w.size()), row;
  std::vector<tessera::RowId> all_rows(rows);
  for (int r = 0; r < rows; ++r) all_rows[r] = r;
  std::mt19937 rng(7 + rank);
  std::uniform_int_distribution<int> pick(0, samples - 1);
  if (rank == 0) std::printf("clock  loss(worker 0 shard)  samples/s  seconds\n");
  auto start = std::chrono::steady_clock::now();
  for (int clock = 0; clock < clocks; ++clock) {
    if (auto s = client.Prefetch(0, 1, all_rows); !s.ok())
      return spdlog::error("{}", s.ToString()), 1;
    for (int r = 0; r < rows; ++r) {
      if (auto s = client.Get<float>(0, 1, r, &row); !s.ok())
        return spdlog::error("{}", s.ToString()), 1;
      std::copy(row.begin(), row.end(), w.begin() + static_cast<ptrdiff_t>(r) * row_width);
    }
    std::fill(grad.begin(), grad.end(), 0.0f);
    for (int b = 0; b < batch; ++b) {
      int i = pick(rng);
      float err = -shard.y[i];
      for (int j = 0; j < dim; ++j) err += w[j] * shard.x[i][j];
      for (int j = 0; j < dim; ++j) grad[j] += err * shard.x[i][j];
    }
    // Each worker's step is 1/workers of the step on the union of the minibatches.
    for (float& g : grad) g *= -lr / static_cast<float>(batch * workers);
    for (int r = 0; r < rows; ++r) {
      std::span<const float> step(grad.data() + static_cast<ptrdiff_t>(r) * row_width, row_width);
      if (auto s = client.IncRow<float>(1, r, step); !s.ok())
        return spdlog::error("{}", s.ToString()), 1;
    }
    if (auto s = client.Clock(0); !s.ok()) return spdlog::error("{}", s.ToString()), 1;
    if (rank == 0 && ((clock + 1) % print_every == 0 || clock == clocks - 1)) {
      double loss = 0;
      for (int i = 0; i < samples; ++i) {
        float err = -shard.y[i];
        for (int j = 0; j < dim; ++j) err += w[j] * shard.x[i][j];
        loss += 0.5 * err * err;
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%5d  %20.5f  %9.0f  %7.3f\n", clock + 1, loss / samples,
                  (clock + 1.0) * batch * workers / secs, secs);
      std::fflush(stdout);
    }
  }
  if (auto s = client.Leave(); !s.ok()) spdlog::warn("{}", s.ToString());
  if (server) server->Stop();
  if (coordinator) coordinator->Stop();
  return 0;
}
