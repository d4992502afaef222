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
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

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
  int clocks = 30, samples = 20000, dim = 64, batch = 2000, staleness = 1;
  float lr = 0.3f, noise = 0.1f;
  std::string log_level = "warn";
  app.add_option("--clocks", clocks, "SGD steps (clocks)")->check(CLI::PositiveNumber);
  app.add_option("--samples", samples, "samples per worker")->check(CLI::PositiveNumber);
  app.add_option("--dim", dim, "features")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "minibatch per worker per clock")->check(CLI::PositiveNumber);
  app.add_option("--staleness", staleness, "SSP bound of the weight table")->check(CLI::NonNegativeNumber);
  app.add_option("--lr", lr, "learning rate");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
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
  weights.num_rows = 1;
  weights.width = static_cast<uint32_t>(dim);
  weights.staleness = static_cast<uint32_t>(staleness);
  if (auto s = client.CreateTable(weights); !s.ok()) {
    spdlog::error("worker {}: {}", rank, s.ToString());
    return 1;
  }
  Shard shard = MakeShard(rank, samples, dim, noise);
  std::vector<float> w, grad(dim);
  std::mt19937 rng(7 + rank);
  std::uniform_int_distribution<int> pick(0, samples - 1);
  if (rank == 0) std::printf("clock  loss(worker 0 shard)  samples/s\n");
  auto start = std::chrono::steady_clock::now();
  for (int clock = 0; clock < clocks; ++clock) {
    if (auto s = client.Get<float>(0, 1, 0, &w); !s.ok()) return spdlog::error("{}", s.ToString()), 1;
    std::fill(grad.begin(), grad.end(), 0.0f);
    for (int b = 0; b < batch; ++b) {
      int i = pick(rng);
      float err = -shard.y[i];
      for (int j = 0; j < dim; ++j) err += w[j] * shard.x[i][j];
      for (int j = 0; j < dim; ++j) grad[j] += err * shard.x[i][j];
    }
    // Each worker's step is 1/workers of the step on the union of the minibatches.
    for (float& g : grad) g *= -lr / static_cast<float>(batch * workers);
    if (auto s = client.IncRow<float>(1, 0, grad); !s.ok()) return spdlog::error("{}", s.ToString()), 1;
    if (auto s = client.Clock(0); !s.ok()) return spdlog::error("{}", s.ToString()), 1;
    if (rank == 0 && (clock % 5 == 4 || clock == clocks - 1)) {
      double loss = 0;
      for (int i = 0; i < samples; ++i) {
        float err = -shard.y[i];
        for (int j = 0; j < dim; ++j) err += w[j] * shard.x[i][j];
        loss += 0.5 * err * err;
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%5d  %20.5f  %9.0f\n", clock + 1, loss / samples, (clock + 1.0) * batch * workers / secs);
      std::fflush(stdout);
    }
  }
  if (auto s = client.Leave(); !s.ok()) spdlog::warn("{}", s.ToString());
  if (server) server->Stop();
  if (coordinator) coordinator->Stop();
  return 0;
}
