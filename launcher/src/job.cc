#include "tessera/launcher/job.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "tessera/common/check.h"

namespace tessera::launcher {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kCoordinator: return "coordinator";
    case Role::kServer: return "server";
    case Role::kWorker: return "worker";
  }
  return "unknown";
}

std::string ProcessSpec::Label() const {
  if (role == Role::kCoordinator) return "coordinator";
  return std::string(RoleName(role)) + " " + std::to_string(rank);
}

namespace {

EnvList CommonEnv(const JobOptions& options, Role role, int rank, const std::string& coordinator,
                  const std::string& bind_host) {
  EnvList env = options.extra_env;
  env.emplace_back(kEnvRole, std::string(RoleName(role)));
  env.emplace_back(kEnvRank, std::to_string(rank));
  env.emplace_back(kEnvNumWorkers, std::to_string(options.num_workers));
  env.emplace_back(kEnvNumServers, std::to_string(options.num_servers));
  env.emplace_back(kEnvCoordinator, coordinator);
  env.emplace_back(kEnvBindHost, bind_host);
  if (IsWildcardHost(bind_host) && !options.advertise_host.empty()) {
    env.emplace_back(kEnvAdvertiseHost, options.advertise_host);
  }
  env.emplace_back(kEnvJobSecret, options.job_secret);
  env.emplace_back(kEnvLogLevel, options.log_level);
  env.emplace_back(kEnvHeartbeatTimeout,
                   fmt::format("{:g}", options.heartbeat_timeout.count() / 1000.0));
  return env;
}

bool IsSafeShellChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("@%+=:,./_-", c) != nullptr;
}

}  // namespace

bool IsWildcardHost(std::string_view host) {
  return host == "0.0.0.0" || host == "*" || host == "::" || host == "[::]";
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.substr(0, 4) == "127.";
}

Status ValidateJobOptions(const JobOptions& options) {
  if (options.num_workers < 1) {
    return Status::InvalidArgument("the number of workers (-w) must be at least 1, got " +
                                   std::to_string(options.num_workers));
  }
  if (options.num_servers < 1) {
    return Status::InvalidArgument("the number of servers (-s) must be at least 1, got " +
                                   std::to_string(options.num_servers));
  }
  if (options.program.empty() || options.program[0].empty()) {
    return Status::InvalidArgument("no program to run (expected `-- PROGRAM [ARGS...]`)");
  }
  if (options.server_bin.empty()) return Status::InvalidArgument("no tessera-server binary");
  if (options.bind_host.empty()) return Status::InvalidArgument("--bind must not be empty");
  if (!options.advertise_host.empty() && IsWildcardHost(options.advertise_host)) {
    return Status::InvalidArgument("--advertise " + options.advertise_host +
                                   ": give an address other hosts can connect to, not a "
                                   "wildcard");
  }
  if (!options.hosts.empty()) {
    if (options.ssh_command.empty()) return Status::InvalidArgument("--ssh must not be empty");
    if (IsLoopbackHost(options.bind_host)) {
      for (const HostEntry& h : options.hosts) {
        if (!IsLoopbackHost(h.host) && !IsLoopbackHost(h.address)) {
          return Status::InvalidArgument(
              "host '" + h.host + "' is not this machine, but the coordinator would listen on " +
              options.bind_host + "; pass --bind ADDR with an address of this machine that the " +
              "hosts can reach");
        }
      }
    }
  }
  for (const auto& [name, value] : options.extra_env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return Status::InvalidArgument("bad environment variable name '" + name + "'");
    }
  }
  return Status::Ok();
}

ProcessSpec CoordinatorSpec(const JobOptions& options, const std::string& endpoint_file) {
  ProcessSpec spec;
  spec.role = Role::kCoordinator;
  spec.rank = 0;
  std::string listen = "tcp://" + options.bind_host + ":0";
  spec.argv = {options.server_bin,    "--role",          "coordinator",
               "--listen",            listen,            "--endpoint-file",
               endpoint_file,         "--num-servers",   std::to_string(options.num_servers),
               "--num-workers",       std::to_string(options.num_workers)};
  // TESSERA_COORDINATOR is the address to listen on: the real endpoint is not known yet.
  spec.env = CommonEnv(options, Role::kCoordinator, 0, listen, options.bind_host);
  spec.env.emplace_back(kEnvEndpointFile, endpoint_file);
  return spec;
}

std::vector<ProcessSpec> MemberSpecs(const JobOptions& options,
                                     const std::string& coordinator_endpoint) {
  TESSERA_CHECK(ValidateJobOptions(options).ok());
  std::vector<ProcessSpec> specs;
  const auto& hosts = options.hosts;
  // Where a process runs and what it binds to: this machine and --bind without hosts.
  auto place = [&](ProcessSpec& spec, const HostEntry* host) {
    std::string bind = options.bind_host;
    if (host != nullptr) {
      spec.host = host->host;
      bind = host->address.empty() ? host->host : host->address;
    }
    return bind;
  };
  for (int i = 0; i < options.num_servers; ++i) {
    ProcessSpec spec;
    spec.role = Role::kServer;
    spec.rank = i;
    std::string bind = place(spec, hosts.empty() ? nullptr : &hosts[i % hosts.size()]);
    spec.argv = {options.server_bin, "--role", "server", "--rank", std::to_string(i),
                 "--coordinator", coordinator_endpoint};
    spec.env = CommonEnv(options, Role::kServer, i, coordinator_endpoint, bind);
    specs.push_back(std::move(spec));
  }
  // Workers fill slots host by host, wrapping around when there are more workers than slots.
  std::vector<const HostEntry*> slots;
  for (const HostEntry& h : hosts) {
    for (int s = 0; s < h.slots; ++s) slots.push_back(&h);
  }
  for (int i = 0; i < options.num_workers; ++i) {
    ProcessSpec spec;
    spec.role = Role::kWorker;
    spec.rank = i;
    std::string bind = place(spec, slots.empty() ? nullptr : slots[i % slots.size()]);
    spec.argv = options.program;
    spec.env = CommonEnv(options, Role::kWorker, i, coordinator_endpoint, bind);
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::string ShellQuote(std::string_view word) {
  if (!word.empty()) {
    bool safe = true;
    for (char c : word) safe = safe && IsSafeShellChar(c);
    if (safe) return std::string(word);
  }
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += "'";
  return quoted;
}

std::vector<std::string> SplitCommand(std::string_view command) {
  std::vector<std::string> words;
  std::string current;
  for (char c : command) {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!current.empty()) words.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

std::string RemoteCommandLine(const ProcessSpec& spec, const std::string& working_dir,
                              int kill_after_seconds) {
  // The secret travels on stdin so that it shows up in no process listing on either host.
  std::string line = std::string("IFS= read -r ") + kEnvJobSecret + "; export " + kEnvJobSecret +
                     "; cd " + ShellQuote(working_dir) + " || exit 127; exec 3<&0; setsid env";
  for (const auto& [name, value] : spec.env) {
    if (name == kEnvJobSecret) continue;
    line += " " + ShellQuote(name + "=" + value);
  }
  for (const std::string& arg : spec.argv) line += " " + ShellQuote(arg);
  // Without a terminal, sshd does not signal the command when the connection drops. A watchdog
  // does: stdin stays open for as long as the launcher wants the process, so EOF on it (the
  // launcher stopped the job, died, or lost the connection) means stop: SIGTERM, then SIGKILL
  // if the group is still there after the grace period. The saved stdin (fd 3) is needed
  // because asynchronous commands get /dev/null as stdin. setsid makes the process a
  // process-group leader (an asynchronous command is not one, so setsid does not fork), so that
  // the watchdog stops whatever the process started too. The watchdog ignores the signals that
  // may hit the remote shell's group (a hang-up), so that it is still there to stop the process.
  line += " 3<&- & p=$!; (trap '' HUP INT TERM; cat >/dev/null; kill -TERM -$p 2>/dev/null && "
          "{ sleep " + std::to_string(kill_after_seconds) + "; kill -KILL -$p 2>/dev/null; }) "
          "<&3 >/dev/null 2>&1 & exec 3<&-; wait $p";
  return line;
}

LaunchCommand MakeLaunchCommand(const ProcessSpec& spec, const JobOptions& options) {
  LaunchCommand command;
  if (spec.host.empty()) {
    command.argv = spec.argv;
    command.env = spec.env;
    return command;
  }
  command.argv = options.ssh_command;
  command.argv.push_back(spec.host);
  command.argv.push_back(
      RemoteCommandLine(spec, options.working_dir, options.remote_kill_after_seconds));
  command.stdin_pipe = true;
  command.stdin_data = options.job_secret + "\n";
  return command;
}

Result<std::string> ResolveExecutable(const std::string& name) {
  auto check = [](const std::string& path) -> Status {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      return Status::NotFound(path + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) return Status::FailedPrecondition(path + ": not a regular file");
    if (::access(path.c_str(), X_OK) != 0) {
      return Status::FailedPrecondition(path + ": not executable (" + std::strerror(errno) + ")");
    }
    return Status::Ok();
  };
  if (name.empty()) return Status::InvalidArgument("empty program name");
  if (name.find('/') != std::string::npos) {
    Status s = check(name);
    if (!s.ok()) return s;
    return name;
  }
  const char* path_env = std::getenv("PATH");
  std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (check(candidate).ok()) return candidate;
    start = end + 1;
  }
  return Status::NotFound(name + ": not found in PATH");
}

Result<std::string> GenerateJobSecret() {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Internal(std::string("open /dev/urandom: ") + std::strerror(errno));
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = ::read(fd, bytes + got, sizeof(bytes) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Status::Internal("short read from /dev/urandom");
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret;
  for (unsigned char b : bytes) {
    secret += kHex[b >> 4];
    secret += kHex[b & 15];
  }
  return secret;
}

}  // namespace tessera::launcher
