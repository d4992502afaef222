// The launcher's side of liveness: `tessera run` heartbeats to the coordinator like every process
// of the job, and the coordinator reports to it a process that stopped answering (JobFailed), so
// that the launcher names it and stops the job. The monitor also notices a coordinator that stops
// answering. Polled from the supervisor's loop (it has no thread of its own: the loop runs every
// 50 ms whatever the job does).
//
// Thread safety: thread-compatible.
#ifndef TESSERA_LAUNCHER_SRC_JOB_MONITOR_H_
#define TESSERA_LAUNCHER_SRC_JOB_MONITOR_H_

#include <chrono>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/transport/connect_watch.h"
#include "tessera/transport/liveness.h"

namespace tessera::launcher {

struct JobFailure {
  std::string reason;  // names the process
  int exit_code = kExitUnresponsive;
};

class JobMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to the coordinator at `endpoint`. REQUIRES: timeout > 0.
  static Result<std::unique_ptr<JobMonitor>> Connect(const std::string& endpoint,
                                                     const std::string& secret,
                                                     std::chrono::milliseconds timeout);
  ~JobMonitor();
  JobMonitor(const JobMonitor&) = delete;
  JobMonitor& operator=(const JobMonitor&) = delete;

  // Sends a heartbeat when one is due and reads what the coordinator sent. Returns the job's
  // failure: one the coordinator reported, the coordinator's own silence (`coordinator` names
  // it in the reason; when not even a connection was made, the reason says so and names the
  // endpoint), or, within kConnectLimit, an endpoint the launcher cannot connect to (a wrong
  // --advertise: then no other process can either). Never blocks.
  std::optional<JobFailure> Poll(Clock::time_point now, const std::string& coordinator);

  // Tells the coordinator the launcher is done watching (the job is ending). Idempotent.
  void Leave();

 private:
  JobMonitor(const std::string& endpoint, const std::string& secret,
             std::chrono::milliseconds timeout);
  void Send(bool leaving);

  zmq::context_t context_;
  zmq::socket_t socket_;
  ConnectWatch reach_;  // until the first connection
  bool reached_ = false;
  const std::string endpoint_;
  const std::string secret_;
  const std::chrono::milliseconds timeout_;
  const LivenessTiming timing_;
  const std::string host_;
  Clock::time_point next_send_;
  Clock::time_point last_heard_;
  bool left_ = false;
};

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_SRC_JOB_MONITOR_H_
