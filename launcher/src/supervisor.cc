#include "tessera/launcher/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "job_monitor.h"
#include "tessera/launcher/subprocess.h"
#include "tessera/transport/liveness.h"

namespace tessera::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// A line longer than this is emitted in pieces rather than buffered without bound.
constexpr size_t kMaxLine = 64 * 1024;
// How often children are reaped when nothing else wakes the loop. Bounds how late an exit is
// noticed when a child's pipes stay open (e.g. held by its own children).
constexpr std::chrono::milliseconds kTick{50};
constexpr int kMaxReadsPerDrain = 16;

struct Stream {
  int fd = -1;
  int dest_fd = -1;
  std::string partial;
};

struct Child {
  ProcessSpec spec;
  pid_t pid = -1;
  int stdin_fd = -1;
  Stream out;
  Stream err;
  bool running = true;  // not reaped yet
  int wait_status = 0;
};

std::string ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[512];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// The scratch directory's name carries the launcher's pid, so that a later launch can tell the
// directory of a launcher that died without cleaning up (SIGKILL) from one still in use.
constexpr char kScratchPrefix[] = "tessera-job-";

void RemoveDirShallow(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// Removes the scratch directories under `tmp` of this user's launchers (and workers) that no
// longer run.
void SweepStaleScratchDirs(const std::string& tmp) {
  DIR* d = ::opendir(tmp.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(kScratchPrefix)) continue;
    name.remove_prefix(sizeof(kScratchPrefix) - 1);
    const size_t dash = name.find('-');
    if (dash == std::string_view::npos || dash == 0) continue;  // not ours (an older layout)
    const std::string pid_text(name.substr(0, dash));
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (end == nullptr || *end != '\0' || pid <= 0) continue;
    const std::string path = tmp + "/" + e->d_name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    stale.push_back(path);
  }
  ::closedir(d);
  for (const std::string& path : stale) {
    spdlog::debug("removing {}, left by a launcher that no longer runs", path);
    RemoveDirShallow(path);
  }
}

class Job {
 public:
  Job(const RunOptions& options, const RunIo& io) : options_(options), io_(io) {}
  ~Job() {
    for (auto& c : children_) {
      CloseFd(&c->stdin_fd);
      CloseFd(&c->out.fd);
      CloseFd(&c->err.fd);
    }
    if (own_scratch_ && !scratch_dir_.empty()) RemoveDirShallow(scratch_dir_);
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  Result<int> Run();

 private:
  Status Start(const ProcessSpec& spec);
  // Waits up to `timeout` for output or a cancel request, handles both, then reaps children.
  void Pump(std::chrono::milliseconds timeout);
  // Reads what `stream` of `owner` has, emitting complete lines; closes it at end of file.
  void Drain(const Child& owner, Stream& stream);
  void Emit(const Child& child, Stream& stream, std::string_view line);
  void Reap();
  void OnExit(Child& child);
  void RequestStop();
  void Signal(const Child& child, int sig);
  // Stops everything still running and waits until all children are reaped.
  void StopAndWait();
  bool AnyRunning() const;
  int ExitCode() const;

  const RunOptions& options_;
  const RunIo& io_;
  std::string scratch_dir_;
  bool own_scratch_ = false;
  std::vector<std::unique_ptr<Child>> children_;
  bool members_started_ = false;
  int workers_succeeded_ = 0;
  std::optional<int> failure_code_;
  std::optional<int> cancel_signal_;
  std::optional<Clock::time_point> kill_deadline_;  // set once stopping; SIGKILL after it
  bool killed_ = false;
  std::unique_ptr<JobMonitor> monitor_;  // null without liveness checks
  // A process that exited because it lost the coordinator, while the launcher's own watch of the
  // coordinator has not concluded yet: reported only if that watch does not name the coordinator
  // within the heartbeat timeout (the coordinator is the cause to report, not the symptom).
  std::optional<std::string> lost_coordinator_report_;
  Clock::time_point lost_coordinator_since_;
  // The first worker that exited kExitPeerLeft (another worker left the program early): reported,
  // with that status, only if the worker that left does not fail with a status of its own within
  // PeerLeftWait() (it may also have returned 0).
  std::optional<std::string> peer_left_report_;
  Clock::time_point peer_left_since_;
  int workers_peer_left_ = 0;
  std::chrono::milliseconds PeerLeftWait() const {
    // Below the coordinator's silence (0.8 x the heartbeat timeout), which would report the
    // exited worker as unanswering.
    const auto hb = options_.job.heartbeat_timeout;
    return hb.count() > 0 ? hb / 2 : options_.grace_period;
  }
};

Status Job::Start(const ProcessSpec& spec) {
  LaunchCommand command = MakeLaunchCommand(spec, options_.job);
  SpawnOptions spawn;
  spawn.argv = command.argv;
  spawn.env = command.env;
  spawn.stdin_pipe = command.stdin_pipe;
  Result<ChildProcess> started = SpawnChild(spawn);
  if (!started.ok()) {
    return Status(started.status().code(),
                  spec.Label() + ": " + started.status().message());
  }
  auto child = std::make_unique<Child>();
  child->spec = spec;
  child->pid = started->pid;
  child->stdin_fd = started->stdin_fd;
  child->out = Stream{started->stdout_fd, io_.out_fd, ""};
  child->err = Stream{started->stderr_fd, io_.err_fd, ""};
  if (child->stdin_fd >= 0 && !command.stdin_data.empty()) {
    // MSG_NOSIGNAL: a child that already died must not kill the launcher with SIGPIPE.
    const std::string& data = command.stdin_data;
    size_t sent = 0;
    while (sent < data.size()) {
      ssize_t n = ::send(child->stdin_fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child is gone; its exit is reported when it is reaped
      sent += static_cast<size_t>(n);
    }
  }
  spdlog::debug("started {} (pid {}): {}", spec.Label(), child->pid, fmt::join(command.argv, " "));
  children_.push_back(std::move(child));
  return Status::Ok();
}

void Job::Emit(const Child& child, Stream& stream, std::string_view line) {
  std::string text;
  text.reserve(line.size() + 32);
  text += '[';
  text += child.spec.Label();
  text += "] ";
  text += line;
  text += '\n';
  WriteAll(stream.dest_fd, text.data(), text.size());  // a closed terminal is not our failure
}

void Job::Drain(const Child& owner, Stream& stream) {
  char buf[16384];
  // Bounded, so that a process that writes without pause cannot starve the others: poll reports
  // the rest next time.
  for (int reads = 0; reads < kMaxReadsPerDrain && stream.fd >= 0; ++reads) {
    ssize_t n = ::read(stream.fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      n = 0;  // treat read errors as end of stream
    }
    if (n == 0) {
      if (!stream.partial.empty()) Emit(owner, stream, stream.partial);
      stream.partial.clear();
      CloseFd(&stream.fd);
      return;
    }
    stream.partial.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      size_t nl = stream.partial.find('\n', start);
      if (nl == std::string::npos) break;
      Emit(owner, stream, std::string_view(stream.partial).substr(start, nl - start));
      start = nl + 1;
    }
    stream.partial.erase(0, start);
    if (stream.partial.size() >= kMaxLine) {
      Emit(owner, stream, stream.partial);
      stream.partial.clear();
    }
  }
}

void Job::Pump(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, Stream*>> streams;
  if (io_.cancel_fd >= 0) fds.push_back({io_.cancel_fd, POLLIN, 0});
  for (auto& c : children_) {
    for (Stream* s : {&c->out, &c->err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      streams.emplace_back(c.get(), s);
    }
  }
  int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready > 0) {
    size_t first_stream = fds.size() - streams.size();
    if (first_stream == 1 && fds[0].revents != 0) {
      unsigned char sig = 0;
      ssize_t n = ::read(io_.cancel_fd, &sig, 1);
      int signo = (n == 1 && sig != 0) ? sig : SIGTERM;
      const char* name = sigabbrev_np(signo);
      if (!cancel_signal_) {
        cancel_signal_ = signo;
        spdlog::warn("received SIG{}; stopping the job", name ? name : "?");
        RequestStop();
      } else if (kill_deadline_ && !killed_) {
        // A second Ctrl-C: do not wait for the grace period.
        spdlog::warn("received SIG{} again; killing the job", name ? name : "?");
        kill_deadline_ = Clock::now();
      }
    }
    for (size_t i = 0; i < streams.size(); ++i) {
      if (fds[first_stream + i].revents != 0) Drain(*streams[i].first, *streams[i].second);
    }
  }
  Reap();
}

void Job::Reap() {
  for (auto& c : children_) {
    if (!c->running) continue;
    int status = 0;
    pid_t r = ::waitpid(c->pid, &status, WNOHANG);
    if (r == c->pid) {
      c->running = false;
      c->wait_status = status;
      // Pick up what it printed last before reporting its exit.
      Drain(*c, c->out);
      Drain(*c, c->err);
      OnExit(*c);
    } else if (r < 0 && errno == ECHILD) {
      c->running = false;  // reaped elsewhere; nothing more to learn
    }
  }
}

void Job::OnExit(Child& child) {
  const int status = child.wait_status;
  const bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const std::string who =
      child.spec.Label() + " (pid " + std::to_string(child.pid) + ") " + DescribeWaitStatus(status);
  if (kill_deadline_) {
    spdlog::debug("{}", who);
    return;
  }
  if (!members_started_) return;  // the coordinator during start-up: Run() reports it
  if (!success) {
    if (child.spec.role == Role::kWorker && WIFEXITED(status) &&
        WEXITSTATUS(status) == kExitPeerLeft) {
      // A consequence: the worker that left the program early is the failure to report, with its
      // own status, once it exits (its final barrier fails now that this worker is gone).
      if (!peer_left_report_) {
        peer_left_report_ = who;
        peer_left_since_ = Clock::now();
      }
      ++workers_peer_left_;
      return;
    }
    if (monitor_ && child.spec.role != Role::kCoordinator && WIFEXITED(status) &&
        WEXITSTATUS(status) == kExitJobFailed) {
      if (!lost_coordinator_report_) {
        lost_coordinator_report_ = who;
        lost_coordinator_since_ = Clock::now();
      }
      return;
    }
    spdlog::error("{}; stopping the job", who);
    failure_code_ = ExitCodeOf(status);
    RequestStop();
    return;
  }
  if (child.spec.role == Role::kWorker) {
    spdlog::debug("{}", who);
    ++workers_succeeded_;
    if (peer_left_report_) return;  // reported by Run() now that every worker has exited
    if (workers_succeeded_ == options_.job.num_workers) {
      spdlog::debug("all {} workers finished; stopping the servers", workers_succeeded_);
      RequestStop();
    }
    return;
  }
  // Not a failure by itself (a coordinator may end the job on its own), but worth a note.
  spdlog::debug("{} before the workers finished", who);
}

void Job::Signal(const Child& child, int sig) {
  // The whole process group: a script's children or an ssh session go too.
  if (::kill(-child.pid, sig) != 0) ::kill(child.pid, sig);
}

void Job::RequestStop() {
  if (kill_deadline_) return;
  kill_deadline_ = Clock::now() + options_.grace_period;
  if (monitor_) monitor_->Leave();
  for (auto& c : children_) {
    CloseFd(&c->stdin_fd);  // a remote process's watchdog sees EOF
    if (!c->running) continue;
    Signal(*c, SIGTERM);
    Signal(*c, SIGCONT);  // a stopped process (SIGSTOP) handles its SIGTERM now, not when resumed
  }
}

bool Job::AnyRunning() const {
  for (const auto& c : children_) {
    if (c->running) return true;
  }
  return false;
}

void Job::StopAndWait() {
  RequestStop();
  while (AnyRunning()) {
    if (!killed_ && Clock::now() >= *kill_deadline_) {
      killed_ = true;
      for (auto& c : children_) {
        if (!c->running) continue;
        spdlog::warn("{} (pid {}) did not stop within {} ms of SIGTERM; killing it",
                     c->spec.Label(), c->pid, options_.grace_period.count());
        Signal(*c, SIGKILL);
      }
    }
    Pump(kTick);
  }
  // Output still buffered in pipes, bounded: pipes held open by orphaned grandchildren must not
  // keep the launcher alive.
  const auto drain_deadline = Clock::now() + std::chrono::milliseconds(500);
  while (Clock::now() < drain_deadline) {
    bool open = false;
    for (auto& c : children_) open = open || c->out.fd >= 0 || c->err.fd >= 0;
    if (!open) break;
    Pump(kTick);
  }
  for (auto& c : children_) {
    for (Stream* s : {&c->out, &c->err}) {
      if (!s->partial.empty()) Emit(*c, *s, s->partial);
      s->partial.clear();
      CloseFd(&s->fd);
    }
  }
}

int Job::ExitCode() const {
  if (cancel_signal_) return 128 + *cancel_signal_;
  if (failure_code_) return *failure_code_ != 0 ? *failure_code_ : 1;
  int code = 0;
  for (const auto& c : children_) {
    if (c->spec.role == Role::kWorker) code = std::max(code, ExitCodeOf(c->wait_status));
  }
  return code;
}

Result<int> Job::Run() {
  scratch_dir_ = options_.scratch_dir;
  if (scratch_dir_.empty()) {
    const char* tmp_env = std::getenv("TMPDIR");
    const std::string tmp = tmp_env != nullptr && *tmp_env != '\0' ? tmp_env : "/tmp";
    SweepStaleScratchDirs(tmp);
    SweepStaleScratchDirs("/dev/shm");  // workers' same-host inboxes (runtime: local_inbox.h)
    std::string pattern = tmp + "/" + kScratchPrefix + std::to_string(::getpid()) + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return Status::Internal("cannot create a scratch directory " + pattern + ": " +
                              std::strerror(errno));
    }
    scratch_dir_ = pattern;
    own_scratch_ = true;
  }
  const std::string endpoint_file = scratch_dir_ + "/coordinator.endpoint";

  Status started = Start(CoordinatorSpec(options_.job, endpoint_file));
  if (!started.ok()) return started;
  const Child& coordinator = *children_.front();

  // Wait for the endpoint, bounded by the start-up timeout and by the coordinator's life.
  const auto deadline = Clock::now() + options_.startup_timeout;
  std::string endpoint;
  while (true) {
    Pump(std::chrono::milliseconds(20));
    if (cancel_signal_) {
      StopAndWait();
      return ExitCode();
    }
    if (!coordinator.running) {
      Status error = Status::Unavailable(
          "coordinator (pid " + std::to_string(coordinator.pid) + ") " +
          DescribeWaitStatus(coordinator.wait_status) + " before writing its endpoint to " +
          endpoint_file);
      StopAndWait();
      return error;
    }
    endpoint = ReadSmallFile(endpoint_file);
    if (!endpoint.empty()) break;
    if (Clock::now() >= deadline) {
      Status error = Status::Unavailable(
          "the coordinator (pid " + std::to_string(coordinator.pid) +
          ") did not write its endpoint to " + endpoint_file + " within " +
          std::to_string(options_.startup_timeout.count()) + " ms");
      StopAndWait();
      return error;
    }
  }
  spdlog::debug("coordinator listens on {}", endpoint);
  // The directory held only the endpoint: gone now, nothing is left behind if the launcher is
  // killed later (and a launcher killed before this point is swept by the next launch).
  if (own_scratch_) {
    RemoveDirShallow(scratch_dir_);
    own_scratch_ = false;
  }
  if (options_.job.heartbeat_timeout.count() > 0) {
    Result<std::unique_ptr<JobMonitor>> monitor =
        JobMonitor::Connect(endpoint, options_.job.job_secret, options_.job.heartbeat_timeout);
    if (!monitor.ok()) {
      StopAndWait();
      return monitor.status();
    }
    monitor_ = std::move(monitor).value();
  }

  for (const ProcessSpec& spec : MemberSpecs(options_.job, endpoint)) {
    Status s = Start(spec);
    if (!s.ok()) {
      StopAndWait();
      return s;
    }
  }
  members_started_ = true;

  const std::string coordinator_name =
      "the coordinator (pid " + std::to_string(coordinator.pid) + ")";
  while (AnyRunning()) {
    if (kill_deadline_) {
      StopAndWait();
      break;
    }
    Pump(kTick);
    // Once the coordinator has exited (it does when every worker has left), its silence means
    // nothing more: its exit was handled like any process's.
    if (monitor_ && !kill_deadline_ && coordinator.running) {
      if (std::optional<JobFailure> failure = monitor_->Poll(Clock::now(), coordinator_name)) {
        spdlog::error("{}; stopping the job", failure->reason);
        failure_code_ = failure->exit_code;
        RequestStop();
      }
    }
    if (peer_left_report_ && !kill_deadline_ &&
        (workers_succeeded_ + workers_peer_left_ == options_.job.num_workers ||
         Clock::now() - peer_left_since_ > PeerLeftWait())) {
      spdlog::error("{}; stopping the job", *peer_left_report_);
      failure_code_ = kExitPeerLeft;
      RequestStop();
    }
    if (lost_coordinator_report_ && !kill_deadline_ &&
        (!coordinator.running ||
         Clock::now() - lost_coordinator_since_ > options_.job.heartbeat_timeout)) {
      spdlog::error("{}; stopping the job", *lost_coordinator_report_);
      failure_code_ = kExitJobFailed;
      RequestStop();
    }
  }
  StopAndWait();
  return ExitCode();
}

}  // namespace

Result<int> RunJob(const RunOptions& options, const RunIo& io) {
  Job job(options, io);
  return job.Run();
}

}  // namespace tessera::launcher
