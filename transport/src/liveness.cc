#include "tessera/transport/liveness.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tessera/common/logging.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/security.h"
#include "tessera/transport/socket_limits.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A process that has no connection to the coordinator this long after starting says so (the
// usual cause: an address that does not route from this host, such as tcp://0.0.0.0).
constexpr milliseconds kUnreachedWarning{3000};

}  // namespace

Result<milliseconds> ParseHeartbeatTimeout(std::string_view text, std::string_view source) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(s.c_str(), &end);
  if (s.empty() || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(seconds) ||
      seconds < 0 || seconds > 86400) {
    return Status::InvalidArgument(fmt::format(
        "{}: '{}' is not a heartbeat timeout (seconds, 0 to 86400; 0 turns liveness checks off)",
        source, s));
  }
  return milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

Result<milliseconds> HeartbeatTimeoutFromEnv() {
  const char* v = std::getenv(kEnvHeartbeatTimeout);
  if (v == nullptr || *v == '\0') return kDefaultHeartbeatTimeout;
  return ParseHeartbeatTimeout(v, kEnvHeartbeatTimeout);
}

LivenessTiming LivenessTiming::For(milliseconds timeout) {
  LivenessTiming t;
  t.interval = std::max(milliseconds(10), timeout / 10);
  t.silence = timeout * 4 / 5;
  t.check = std::min(t.interval, milliseconds(100));
  return t;
}

std::string DescribeProcess(proto::Role role, uint32_t rank, uint32_t pid, std::string_view host) {
  switch (role) {
    case proto::Role::SERVER:
      return fmt::format("server {} (pid {} on {})", rank, pid, host);
    case proto::Role::WORKER:
      return fmt::format("worker {} (pid {} on {})", rank, pid, host);
    case proto::Role::LAUNCHER:
      return fmt::format("the launcher (pid {} on {})", pid, host);
  }
  return fmt::format("process {} (pid {} on {})", rank, pid, host);
}

class LivenessAgent::Impl {
 public:
  Impl(LivenessAgentOptions options, zmq::context_t& context)
      : options_(std::move(options)),
        timing_(LivenessTiming::For(options_.timeout)),
        socket_(context, zmq::socket_type::dealer),
        host_(HostName()),
        connect_events_(context, zmq::socket_type::pair),
        log_(MakeLogger(options_.role == proto::Role::SERVER
                            ? fmt::format("liveness-server-{}", options_.rank)
                            : fmt::format("liveness-worker-{}", options_.rank))) {}

  ~Impl() { Leave(); }

  Status Start() {
    ConfigureControlSocket(socket_);
    SecureConnectSide(socket_, options_.secret);
    proof_ = SecretProof(options_.secret);
    // The final heartbeat (`leaving`) must go out even though the socket closes right after it.
    socket_.set(zmq::sockopt::linger, 1000);
    // Before connecting, so that the connection's first event is not missed.
    const std::string monitor =
        fmt::format("inproc://tessera-liveness-connect-{}", static_cast<void*>(socket_.handle()));
    if (zmq_socket_monitor(socket_.handle(), monitor.c_str(),
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED) == 0) {
      connect_events_.set(zmq::sockopt::linger, 0);
      connect_events_.connect(monitor);
      watching_connection_ = true;
    }
    try {
      socket_.connect(options_.coordinator);
    } catch (const zmq::error_t& e) {
      return Status::InvalidArgument(fmt::format("liveness: cannot connect to coordinator {}: {}",
                                                 options_.coordinator, e.what()));
    }
    thread_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  bool answered() const { return heard_once_.load(std::memory_order_acquire); }
  void Joined() {
    joined_.store(true, std::memory_order_release);
    waker_.Notify();
  }

  void Abandon() {
    abandoned_.store(true, std::memory_order_release);
    Leave();
  }

  void Leave() {
    if (left_.exchange(true)) return;
    waker_.Notify();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void SendHeartbeat(bool leaving) {
    OutgoingMessage msg(options_.rank, 0);
    auto hb = msg.envelope().getBody().initHeartbeat();
    hb.setRole(options_.role);
    hb.setRank(options_.rank);
    hb.setPid(static_cast<uint32_t>(::getpid()));
    hb.setHost(host_);
    hb.setSecret(proof_);
    hb.setLeaving(leaving);
    // Never blocks: the queue is unbounded, and a coordinator that does not read is caught by
    // the silence check, not by a stuck send.
    (void)SendRetrying(socket_, msg.ToFrame(), zmq::send_flags::dontwait);
  }

  void Fail(const std::string& reason, int exit_code) {
    if (options_.on_failure) {
      options_.on_failure(reason, exit_code);
      return;
    }
    log_->error("{}; exiting with status {}", reason, exit_code);
    spdlog::default_logger()->flush();
    log_->flush();
    std::_Exit(exit_code);
  }

  // Handles one message from the coordinator; false when the agent must stop (a failure).
  bool Handle(zmq::message_t frame, Clock::time_point now) {
    auto msg = IncomingMessage::Parse(std::move(frame));
    if (!msg.ok()) {
      log_->error("bad message from the coordinator: {}", msg.status().ToString());
      return true;
    }
    try {
      auto body = (*msg)->envelope().getBody();
      switch (body.which()) {
        case proto::Envelope::Body::HEARTBEAT_ACK:
          last_heard_ = now;
          heard_once_.store(true, std::memory_order_release);
          supervised_ = body.getHeartbeatAck().getSupervised();
          return true;
        case proto::Envelope::Body::JOB_FAILED: {
          auto f = body.getJobFailed();
          Fail(fmt::format("the job failed: {}", f.getReason().cStr()), kExitJobFailed);
          return false;
        }
        case proto::Envelope::Body::ERROR:
          Fail(fmt::format("the coordinator {} rejected this process's heartbeat: {}",
                           options_.coordinator, StatusFromError(body.getError()).ToString()),
               kExitJobFailed);
          return false;
        default:
          log_->error("unexpected message from the coordinator");
          return true;
      }
    } catch (const kj::Exception& e) {
      log_->error("malformed message from the coordinator: {}", e.getDescription().cStr());
      return true;
    }
  }

  // Until the first connection to the coordinator: counts failed attempts and, when there is
  // still none after kUnreachedWarning, says so once, naming the address.
  void WatchConnection(Clock::time_point now, Clock::time_point start) {
    if (!watching_connection_) return;
    bool connected = heard_once_.load(std::memory_order_acquire);
    zmq::message_t event;
    while (ReceiveRetrying(connect_events_, event, zmq::recv_flags::dontwait)) {
      zmq::message_t address;
      if (event.more()) (void)ReceiveRetrying(connect_events_, address, zmq::recv_flags::dontwait);
      if (event.size() < sizeof(uint16_t)) continue;
      uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof(id));
      if (id == ZMQ_EVENT_CONNECTED) {
        connected = true;
      } else {
        ++failed_connects_;
      }
    }
    if (!connected && now - start < kUnreachedWarning) return;
    if (!connected) {
      log_->warn(
          "cannot reach the coordinator at {} from {}: no connection after {:.0f} s ({} attempts "
          "failed); still trying. Is that address routable from this host? (A job bound to "
          "0.0.0.0 must advertise a routable address: tessera run --advertise ADDR.) Is the port "
          "open in the firewall?",
          options_.coordinator, host_, Seconds(now - start), failed_connects_);
    }
    zmq_socket_monitor(socket_.handle(), nullptr, 0);
    watching_connection_ = false;
  }

  void Loop() {
    std::vector<zmq::pollitem_t> items = {{socket_.handle(), 0, ZMQ_POLLIN, 0}, waker_.poll_item()};
    const Clock::time_point start = Clock::now();
    last_heard_ = start;
    Clock::time_point next_send = start;
    while (!left_.load(std::memory_order_acquire)) {
      Clock::time_point now = Clock::now();
      if (now >= next_send) {
        SendHeartbeat(false);
        next_send = now + timing_.interval;
      }
      const auto wait = std::min<Clock::duration>(next_send - now, timing_.check);
      PollItems(items.data(), items.size(),
                std::max(milliseconds(1), std::chrono::ceil<milliseconds>(wait)));
      if (items[1].revents & ZMQ_POLLIN) waker_.Drain();
      now = Clock::now();
      zmq::message_t frame;
      while (ReceiveRetrying(socket_, frame, zmq::recv_flags::dontwait)) {
        if (!Handle(std::move(frame), now)) return;
      }
      if (!heard_once_.load(std::memory_order_acquire) && joined_.load(std::memory_order_acquire)) {
        last_heard_ = now;  // the join's answer
        heard_once_.store(true, std::memory_order_release);
      }
      WatchConnection(now, start);
      // A watching launcher reports a silent coordinator itself (and stops everything): give it
      // the time to, so that the report names the coordinator rather than this process.
      milliseconds limit = supervised_ ? 2 * options_.timeout : timing_.silence;
      if (!heard_once_) limit = std::max(limit, kFirstHeartbeatGrace);
      if (now - last_heard_ > limit) {
        Fail(fmt::format("lost the coordinator at {}: no answer for {:.1f} s", options_.coordinator,
                         Seconds(now - last_heard_)),
             kExitJobFailed);
        return;
      }
    }
    if (!abandoned_.load(std::memory_order_acquire)) SendHeartbeat(true);
  }

  const LivenessAgentOptions options_;
  const LivenessTiming timing_;
  zmq::socket_t socket_;  // used by the agent's thread only (after Start)
  const std::string host_;
  // Connection events of socket_ until its first connection (WatchConnection).
  zmq::socket_t connect_events_;
  bool watching_connection_ = false;
  int failed_connects_ = 0;
  std::string proof_;  // SecretProof(options_.secret), set by Start
  std::shared_ptr<spdlog::logger> log_;
  Waker waker_;
  std::atomic<bool> left_{false};
  std::atomic<bool> abandoned_{false};  // stop without the `leaving` heartbeat
  // Agent-thread state.
  Clock::time_point last_heard_;
  std::atomic<bool> heard_once_{false};
  std::atomic<bool> joined_{false};  // Joined(): the coordinator answered the join
  bool supervised_ = false;
  std::thread thread_;  // last: joined (by Leave) before the state it uses goes away
};

LivenessAgent::LivenessAgent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LivenessAgent::~LivenessAgent() = default;

Result<std::unique_ptr<LivenessAgent>> LivenessAgent::Start(LivenessAgentOptions options,
                                                            zmq::context_t& context) {
  if (options.coordinator.empty()) {
    return Status::InvalidArgument("liveness: no coordinator endpoint");
  }
  if (options.timeout <= milliseconds(0)) return std::unique_ptr<LivenessAgent>();
  auto impl = std::make_unique<Impl>(std::move(options), context);
  if (Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<LivenessAgent>(new LivenessAgent(std::move(impl)));
}

void LivenessAgent::Leave() { impl_->Leave(); }
void LivenessAgent::Abandon() { impl_->Abandon(); }
bool LivenessAgent::answered() const { return impl_->answered(); }
void LivenessAgent::Joined() { impl_->Joined(); }

}  // namespace tessera
