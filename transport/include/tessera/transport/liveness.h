// Liveness: heartbeats between every process of a job and its coordinator.
//
// Each server and worker runs a LivenessAgent: a thread of its own, with its own socket, that
// sends a Heartbeat to the coordinator every tenth of the heartbeat timeout and reads the
// coordinator's answers. Because the thread does not depend on the program's threads, a long
// load or a long loop body never looks like a hang; a process that stops (SIGSTOP, a crash, a
// machine gone) stops answering. The coordinator declares a process dead after LivenessTiming's
// `silence` without a heartbeat, so that the report comes within the configured timeout.
//
// What each side does on a failure is in docs/faults.md ("When something fails").
#ifndef TESSERA_TRANSPORT_LIVENESS_H_
#define TESSERA_TRANSPORT_LIVENESS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera {

// The variable every process reads its heartbeat timeout from: seconds (a decimal), 0 = no
// liveness checks. `tessera run --heartbeat-timeout` sets it.
inline constexpr char kEnvHeartbeatTimeout[] = "TESSERA_HEARTBEAT_TIMEOUT";
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{10000};

// How long, at the start of a job, the coordinator waits for each process's first heartbeat and a
// process waits for the coordinator's first answer (when longer than the timeout's silence):
// under srun or mpirun the tasks start together and some come up late, and a program may do work
// of its own before it joins.
inline constexpr std::chrono::milliseconds kFirstHeartbeatGrace{60000};

// Exit code of a process that stops because the job failed elsewhere, or because it lost the
// coordinator.
inline constexpr int kExitJobFailed = 75;
// Exit code of a worker that stops because another worker left the program before it (returned
// from main, most often with an error of its own): a consequence, not the failure to report, and
// not worth a restart (the job would fail the same way).
inline constexpr int kExitPeerLeft = 76;
// Exit code of a job (and, under --from-env, of the coordinator) ended because a process stopped
// answering.
inline constexpr int kExitUnresponsive = 124;

// Parses a heartbeat timeout in seconds ("10", "2.5", "0"). InvalidArgument naming `source`
// (e.g. the variable) for anything else, negative values and values above a day.
Result<std::chrono::milliseconds> ParseHeartbeatTimeout(std::string_view text,
                                                        std::string_view source);
// kEnvHeartbeatTimeout, or kDefaultHeartbeatTimeout when it is unset or empty.
Result<std::chrono::milliseconds> HeartbeatTimeoutFromEnv();

// The periods derived from a timeout. REQUIRES: timeout > 0.
struct LivenessTiming {
  std::chrono::milliseconds interval;  // between heartbeats: timeout / 10 (at least 10 ms)
  std::chrono::milliseconds silence;   // declared dead after this long unheard: 0.8 * timeout
  std::chrono::milliseconds check;     // how often silences are checked: min(interval, 100 ms)
  static LivenessTiming For(std::chrono::milliseconds timeout);
};

// "worker 1 (pid 4242 on node2)", "the launcher (pid 7 on node1)".
std::string DescribeProcess(proto::Role role, uint32_t rank, uint32_t pid, std::string_view host);

struct LivenessAgentOptions {
  std::string coordinator;  // endpoint. REQUIRES: not empty
  proto::Role role = proto::Role::WORKER;
  uint32_t rank = 0;
  std::string secret;
  // 0: no liveness checks, and Start() returns no agent.
  std::chrono::milliseconds timeout = kDefaultHeartbeatTimeout;
  // Called once, on the agent's thread, when the coordinator reports that the job failed or stops
  // answering (for LivenessTiming::silence, or twice the timeout when a launcher watches the job:
  // the launcher reports it first). Default: log `reason` and end the process with exit_code
  // (std::_Exit: the job is over, and the program's threads may be blocked waiting for it).
  std::function<void(const std::string& reason, int exit_code)> on_failure;
};

class LivenessAgent {
 public:
  // Connects and starts the heartbeat thread; nullptr when options.timeout is 0. `context` must
  // outlive the agent.
  static Result<std::unique_ptr<LivenessAgent>> Start(LivenessAgentOptions options,
                                                      zmq::context_t& context);
  // Leave()s.
  ~LivenessAgent();
  LivenessAgent(const LivenessAgent&) = delete;
  LivenessAgent& operator=(const LivenessAgent&) = delete;

  // Tells the coordinator this process is done with the job (a final heartbeat with `leaving`)
  // and stops the thread: from now on neither side watches the other. Idempotent.
  void Leave();

  // Stops the thread without telling the coordinator: this process failed (e.g. it could not
  // join the job), and its silence reports it, within the heartbeat timeout, as a failure of the
  // job. Leave() is then a no-op. Idempotent.
  void Abandon();

  // Whether the coordinator has answered at least once (until then a silent coordinator is given
  // kFirstHeartbeatGrace).
  bool answered() const;

  // The process joined the job: the coordinator answered on another socket. From now on its
  // silence counts from here, without the first-heartbeat grace, so that a coordinator lost
  // before this agent's first heartbeat was answered is reported within the timeout too.
  void Joined();

 private:
  class Impl;
  explicit LivenessAgent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_LIVENESS_H_
