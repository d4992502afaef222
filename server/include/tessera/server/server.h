// Server: one shard of the job's tables.
//
// Holds the rows that hash to it, applies additive update batches exactly once, keeps the vector
// clock of the workers, answers reads once the SSP bound they ask for holds, and pushes changed
// rows to the clients that read them whenever its clock (the minimum over workers) advances.
//
// Thread safety: Start/Stop/WaitUntilDone may be called from any thread; all table state lives on
// the server's single event-loop thread, so no locks guard it.
#ifndef TESSERA_SERVER_SERVER_H_
#define TESSERA_SERVER_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/transport/comm_budget.h"

namespace tessera {

// ServerOptions::send_queue's default. A worker's I/O thread reads what its servers send it as it
// arrives, so its queue holds what the network has not delivered yet: at most the answers to its
// reads (65536 may wait for the clock, server_impl.h) and a clock's pushes, released together.
inline constexpr int kServerSendQueue = 1 << 17;

struct ServerOptions {
  // This server's index in 0 .. num_servers-1. Default: 0.
  int rank = 0;
  // The coordinator's endpoint. REQUIRES: not empty.
  std::string coordinator;
  // Where clients reach this server; tcp port 0 picks an ephemeral port. Default: loopback.
  std::string listen = "tcp://127.0.0.1:0";
  // The job secret: authenticates every tcp/ipc connection (CURVE, tessera/transport/security.h)
  // and registrations (SecretProof). Default: empty, unauthenticated.
  std::string secret;
  // How long Start() waits for the coordinator's membership. Default: 30 s.
  std::chrono::milliseconds join_timeout{30000};
  // Managed communication: between clock advances, spare budget pushes the rows that changed
  // most to the clients holding them. Default: off (rows are pushed at clock advances only).
  CommOptions comm;
  // Heartbeats to the coordinator (tessera/transport/liveness.h); 0 = none. Default: 0
  // (tessera-server sets it from TESSERA_HEARTBEAT_TIMEOUT).
  std::chrono::milliseconds heartbeat_timeout{0};
  // Where the job's checkpoints go (the runtime's --checkpoint-dir, shared with the workers):
  // this server writes its shard of a checkpoint's tables there and reads them back on resume;
  // empty: it refuses to. Default: empty (tessera-server sets it from TESSERA_CHECKPOINT_DIR).
  std::string checkpoint_dir;
  // Messages this server queues for one worker that has not read them yet (ZMQ_SNDHWM of its
  // connection). When a worker's queue is full the server drops what it would send that worker,
  // and the first message to it that fits again is an Error (DataLoss) naming the bound, which
  // fails the worker's Client: nothing is lost silently, and the other workers are served on
  // (docs/security.md). Default: kServerSendQueue.
  int send_queue = kServerSendQueue;
};

// Counters for tests and monitoring; read with Server::stats().
struct ServerStats {
  uint64_t gets = 0;            // get requests answered
  uint64_t parked_gets = 0;     // get requests that had to wait for the clock
  uint64_t update_batches = 0;  // update batches applied
  uint64_t duplicate_batches = 0;
  uint64_t rows_pushed = 0;        // at clock advances
  uint64_t early_rows_pushed = 0;  // between clock advances, from spare budget
  uint64_t bytes_sent = 0;
  uint64_t rejected_messages = 0;  // malformed, wrong version, unknown peer, bad content
  uint64_t unsubscribed_rows = 0;  // (worker, row) subscriptions ended by a worker's cache eviction
  int64_t clock = 0;               // min over workers
  // Messages not sent to a worker because its send queue was full (ServerOptions::send_queue),
  // and workers told so.
  uint64_t overrun_messages = 0;
  uint64_t overrun_workers = 0;
};

class Server {
 public:
  // `context` must outlive the server.
  Server(ServerOptions options, zmq::context_t& context);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, registers with the coordinator, waits for the membership, starts the loop.
  Status Start();
  const std::string& endpoint() const;
  // Blocks until the coordinator ends the job or Stop() is called.
  void WaitUntilDone();
  void Stop();
  // A snapshot of the counters. Thread-safe.
  ServerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_SERVER_H_
