// Coordinator: the one place of a job that knows who is in it.
//
// Servers and workers register with it (with a job secret, only over CURVE-authenticated
// connections, tessera/transport/security.h, and with the secret's proof); once every server has
// registered it tells each registrant the server endpoints and the number of workers. It also
// runs job-wide barriers (counting registered workers only, each once, at most 4 open per worker)
// and, when every worker has left, tells the servers the job is over. A worker whose connection
// closes before it left (its process exited or was killed) makes every open and later barrier
// fail with ErrorCode peerLeft, so that a worker waiting at its final barrier goes on to exit
// with its own status; with heartbeats and no launcher watching, once every worker has left or
// gone so, the job fails at once (kExitJobFailed).
//
// Liveness (heartbeat_timeout > 0): every server and worker, and the launcher, heartbeats to the
// coordinator (LivenessAgent, tessera/transport/liveness.h). A server or worker unheard for
// LivenessTiming::silence fails the job: the coordinator sends JobFailed naming it to the
// launcher when one heartbeats, else to every process and finishes with exit_code()
// kExitUnresponsive (--from-env has no launcher to stop the processes). So does a server or worker
// that neither heartbeats nor registers within first_heartbeat_grace. A process that registers
// saying it heartbeats (Register.heartbeats) is watched from its registration on: its agent's
// first heartbeat must follow within the silence. A process that registers without heartbeating
// (a Client with heartbeat_timeout 0) is not watched.
//
// Thread safety: Start/Stop/WaitUntilDone may be called from any thread; the coordinator's work
// runs on its own event-loop thread.
#ifndef TESSERA_SERVER_COORDINATOR_H_
#define TESSERA_SERVER_COORDINATOR_H_

#include <chrono>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"

namespace tessera {

struct CoordinatorOptions {
  // Where to listen. A tcp port of 0 picks an ephemeral port. Default: loopback, ephemeral.
  std::string listen = "tcp://127.0.0.1:0";
  // Job size. Default: 1 server, 1 worker.
  int num_servers = 1;
  int num_workers = 1;
  // The job secret: connections must be CURVE-authenticated with its keys and registrations carry
  // SecretProof(secret). Default: empty (any registrant is accepted).
  std::string secret;
  // How long a process may stay silent before the job fails (see above). Default: 0, no checks
  // (tessera-server sets it from TESSERA_HEARTBEAT_TIMEOUT).
  std::chrono::milliseconds heartbeat_timeout{0};
  // With heartbeats: a server or worker still unheard this long after Start() fails the job.
  // Default: kFirstHeartbeatGrace (60 s).
  std::chrono::milliseconds first_heartbeat_grace{60000};
};

class Coordinator {
 public:
  // `context` must outlive the coordinator.
  Coordinator(CoordinatorOptions options, zmq::context_t& context);
  ~Coordinator();  // Stops the loop if still running.
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Binds and starts the event loop. REQUIRES: called once.
  Status Start();
  // The endpoint peers connect to (with the actual port). REQUIRES: Start() succeeded.
  const std::string& endpoint() const;
  // Blocks until every worker has left and the servers were told to finish, or Stop().
  void WaitUntilDone();
  void Stop();
  // 0 while the job is running or when it finished normally; the failure's exit code once the
  // coordinator failed the job. REQUIRES: WaitUntilDone() returned.
  int exit_code() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_SERVER_COORDINATOR_H_
