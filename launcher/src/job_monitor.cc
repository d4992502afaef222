#include "job_monitor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/security.h"
#include "tessera/transport/socket_limits.h"

namespace tessera::launcher {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

}  // namespace

JobMonitor::JobMonitor(const std::string& endpoint, const std::string& secret,
                       std::chrono::milliseconds timeout)
    : context_(1),
      socket_(context_, zmq::socket_type::dealer),
      reach_(context_),
      endpoint_(endpoint),
      secret_(secret),
      timeout_(timeout),
      timing_(LivenessTiming::For(timeout)),
      host_(HostName()) {}

JobMonitor::~JobMonitor() { Leave(); }

Result<std::unique_ptr<JobMonitor>> JobMonitor::Connect(const std::string& endpoint,
                                                        const std::string& secret,
                                                        std::chrono::milliseconds timeout) {
  std::unique_ptr<JobMonitor> m(new JobMonitor(endpoint, secret, timeout));
  ConfigureControlSocket(m->socket_);
  SecureConnectSide(m->socket_, secret);
  m->socket_.set(zmq::sockopt::linger, 200);  // the final `leaving` heartbeat
  m->reach_.Watch(m->socket_, "the coordinator", endpoint);
  try {
    m->socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument(
        fmt::format("cannot connect to the coordinator at {}: {}", endpoint, e.what()));
  }
  m->next_send_ = m->last_heard_ = Clock::now();
  return m;
}

void JobMonitor::Send(bool leaving) {
  OutgoingMessage msg(0, 0);
  auto hb = msg.envelope().getBody().initHeartbeat();
  hb.setRole(proto::Role::LAUNCHER);
  hb.setPid(static_cast<uint32_t>(::getpid()));
  hb.setHost(host_);
  hb.setSecret(SecretProof(secret_));
  hb.setLeaving(leaving);
  (void)SendRetrying(socket_, msg.ToFrame(), zmq::send_flags::dontwait);
}

void JobMonitor::Leave() {
  if (left_) return;
  left_ = true;
  Send(true);
}

std::optional<JobFailure> JobMonitor::Poll(Clock::time_point now, const std::string& coordinator) {
  if (left_) return std::nullopt;
  if (now >= next_send_) {
    Send(false);
    next_send_ = now + timing_.interval;
  }
  zmq::message_t frame;
  while (ReceiveRetrying(socket_, frame, zmq::recv_flags::dontwait)) {
    auto msg = IncomingMessage::Parse(std::move(frame));
    if (!msg.ok()) {
      spdlog::warn("bad message from the coordinator: {}", msg.status().ToString());
      continue;
    }
    try {
      auto body = (*msg)->envelope().getBody();
      if (body.isHeartbeatAck()) {
        last_heard_ = now;
      } else if (body.isJobFailed()) {
        return JobFailure{body.getJobFailed().getReason().cStr(),
                          body.getJobFailed().getExitCode()};
      } else if (body.isError()) {
        spdlog::warn("the coordinator rejected the launcher's heartbeat: {}",
                     StatusFromError(body.getError()).ToString());
      }
    } catch (const kj::Exception& e) {
      spdlog::warn("malformed message from the coordinator: {}", e.getDescription().cStr());
    }
  }
  if (!reached_) {
    if (std::optional<Status> reached = reach_.Check()) {
      reached_ = true;
      if (!reached->ok()) return JobFailure{reached->message(), kExitUnresponsive};
    }
  }
  if (now - last_heard_ > timing_.silence && !reached_) {
    return JobFailure{
        fmt::format("{} stopped answering: no connection to it at {} within {:.1f} s (heartbeat "
                    "timeout {:.1f} s). Does that address route from this host (--advertise, "
                    "--bind, a firewall)?",
                    coordinator, endpoint_,
                    std::chrono::duration<double>(now - last_heard_).count(),
                    std::chrono::duration<double>(timeout_).count()),
        kExitUnresponsive};
  }
  if (now - last_heard_ > timing_.silence) {
    return JobFailure{
        fmt::format("{} stopped answering: no answer to the launcher's heartbeats for {:.1f} s "
                    "(heartbeat timeout {:.1f} s)",
                    coordinator, std::chrono::duration<double>(now - last_heard_).count(),
                    std::chrono::duration<double>(timeout_).count()),
        kExitUnresponsive};
  }
  return std::nullopt;
}

}  // namespace tessera::launcher
