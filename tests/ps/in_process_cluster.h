// A whole job inside one test process: coordinator, servers and clients as objects sharing one
// ZeroMQ context, over inproc:// (or tcp on loopback with ephemeral ports).
#ifndef TESSERA_TESTS_PS_IN_PROCESS_CLUSTER_H_
#define TESSERA_TESTS_PS_IN_PROCESS_CLUSTER_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tessera/client/client.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"

namespace tessera::testing {

// A dense table of `type` for tests.
inline TableSpec TestTable(TableId id, std::string name, ValueType type, uint64_t rows,
                           uint32_t width, uint32_t staleness = 0) {
  TableSpec spec;
  spec.id = id;
  spec.name = std::move(name);
  spec.value_type = type;
  spec.num_rows = rows;
  spec.width = width;
  spec.staleness = staleness;
  return spec;
}

struct ClusterOptions {
  int num_servers = 2;
  int num_workers = 2;
  int threads_per_worker = 1;
  int num_clients = -1;  // real clients for workers 0 .. num_clients-1; -1: one per worker
  bool tcp = false;      // default: inproc
  std::string secret = "test-secret";
  CommOptions client_comm;  // managed communication of every client
  CommOptions server_comm;  // and of every server
  uint64_t cache_rows = 0;  // every client's cache capacity per table (0: no limit)
  std::chrono::milliseconds client_timeout{60000};  // every client's ClientOptions::timeout
  std::string checkpoint_dir;                       // every server's ServerOptions::checkpoint_dir
  int server_send_queue = kServerSendQueue;         // every server's ServerOptions::send_queue
};

class InProcessCluster {
 public:
  explicit InProcessCluster(ClusterOptions options) : options_(options) {
    static std::atomic<int> counter{0};
    std::string prefix = "inproc://tessera-test-" + std::to_string(counter++) + "-";
    auto listen = [&](const std::string& name) {
      return options_.tcp ? std::string("tcp://127.0.0.1:0") : prefix + name;
    };
    CoordinatorOptions co;
    co.listen = listen("coordinator");
    co.num_servers = options_.num_servers;
    co.num_workers = options_.num_workers;
    co.secret = options_.secret;
    coordinator_ = std::make_unique<Coordinator>(co, context_);
    EXPECT_TRUE(coordinator_->Start().ok());
    // Servers block in Start() until all of them registered, so start them concurrently.
    std::vector<std::future<Status>> started;
    for (int i = 0; i < options_.num_servers; ++i) {
      ServerOptions so;
      so.rank = i;
      so.coordinator = coordinator_->endpoint();
      so.listen = listen("server-" + std::to_string(i));
      so.secret = options_.secret;
      so.comm = options_.server_comm;
      so.checkpoint_dir = options_.checkpoint_dir;
      so.send_queue = options_.server_send_queue;
      servers_.push_back(std::make_unique<Server>(so, context_));
      started.push_back(
          std::async(std::launch::async, [s = servers_.back().get()] { return s->Start(); }));
    }
    int num_clients = options_.num_clients < 0 ? options_.num_workers : options_.num_clients;
    for (int i = 0; i < num_clients; ++i) {
      ClientOptions o;
      o.rank = i;
      o.coordinator = coordinator_->endpoint();
      o.secret = options_.secret;
      o.num_threads = options_.threads_per_worker;
      o.timeout = options_.client_timeout;
      o.comm = options_.client_comm;
      o.cache_rows = options_.cache_rows;
      clients_.push_back(std::make_unique<Client>(o, context_));
      started.push_back(
          std::async(std::launch::async, [c = clients_.back().get()] { return c->Start(); }));
    }
    for (auto& f : started) {
      Status s = f.get();
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
  }

  ~InProcessCluster() {
    clients_.clear();  // each leaves the job
    for (auto& s : servers_) s->Stop();
    coordinator_->Stop();
  }

  zmq::context_t& context() { return context_; }
  Client& client(int i) { return *clients_[i]; }
  Server& server(int i) { return *servers_[i]; }
  Coordinator& coordinator() { return *coordinator_; }
  int num_workers() const { return options_.num_workers; }
  const ClusterOptions& options() const { return options_; }

 private:
  ClusterOptions options_;
  zmq::context_t context_;
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<std::unique_ptr<Client>> clients_;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_PS_IN_PROCESS_CLUSTER_H_
