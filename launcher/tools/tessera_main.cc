// tessera: the job launcher. `tessera run -w W -s S [options] -- PROGRAM [ARGS...]`.
// Flags are parsed here and nowhere else; the logic lives in tessera_launcher. See
// docs/running.md.
//
// Exit codes: the job's (see supervisor.h); 2 when the command line, the hostfile or the programs
// are wrong (nothing was started); 1 when the job could not be started.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "tessera/common/logging.h"
#include "tessera/launcher/hostfile.h"
#include "tessera/launcher/job.h"
#include "tessera/launcher/net.h"
#include "tessera/launcher/rank_env.h"
#include "tessera/launcher/relay.h"
#include "tessera/launcher/restarts.h"
#include "tessera/launcher/subprocess.h"
#include "tessera/launcher/supervisor.h"
#include "tessera/transport/secret_strength.h"
#include "tessera/version.h"

namespace {

using tessera::Result;
using tessera::Status;
namespace tl = tessera::launcher;

constexpr int kUsageError = 2;
constexpr int kStartError = 1;
constexpr char kMissingDashes[] =
    "missing `--` before the program: tessera run -w W -s S [options] -- PROGRAM [ARGS...]";

// Write end of the pipe that turns SIGINT/SIGTERM/SIGHUP into an event for the supervisor's poll
// loop. A global because a signal handler can reach nothing else; it is set once before the
// handlers are installed and only read afterwards.
int g_cancel_write_fd = -1;
// Set by the same handler: a job stopped on purpose is not restarted.
volatile sig_atomic_t g_cancelled = 0;

void OnCancelSignal(int sig) {
  const int saved_errno = errno;
  g_cancelled = 1;
  unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_cancel_write_fd, &byte, 1);
  errno = saved_errno;
}

// Returns the read end of the cancel pipe.
int InstallCancelHandlers() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  g_cancel_write_fd = fds[1];
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnCancelSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  return fds[0];
}

std::string SelfDirectory() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

int Fail(int code, const std::string& message) {
  spdlog::error("error: {}", message);
  return code;
}

struct RunFlags {
  int workers = 0;
  int servers = 1;
  std::string log_level = "info";
  std::string bind = "127.0.0.1";
  std::string advertise;
  std::string server_bin;
  std::vector<std::string> env;
  std::string hostfile;
  std::string ssh = "ssh -o BatchMode=yes";
  bool from_env = false;
  bool insecure = false;
  bool no_prefix = false;
  std::string coordinator;
  double startup_timeout_s = 30;
  double grace_period_s = 3;
  double heartbeat_timeout_s = 10;
  tl::CheckpointFlags checkpoint;
};

// Registers the `run` flags; their defaults are those of RunFlags.
void AddRunFlags(CLI::App* run, RunFlags* flags) {
  run->add_option("-w,--workers", flags->workers, "Number of worker processes (>= 1)")
      ->required()
      ->default_str("");
  run->add_option("-s,--servers", flags->servers, "Number of server processes (>= 1)")
      ->capture_default_str();
  run->add_option("--log-level", flags->log_level,
                  "trace|debug|info|warn|error|critical|off, for the launcher and the job")
      ->capture_default_str();
  run->add_option("--bind", flags->bind,
                  "Address the coordinator listens on and local processes bind to")
      ->capture_default_str();
  run->add_option("--advertise", flags->advertise,
                  "With a wildcard --bind (0.0.0.0, ::): the address other hosts reach this "
                  "machine's processes at (default: this machine's address toward the other "
                  "hosts, or toward the coordinator with --from-env)");
  run->add_option("--server-bin", flags->server_bin,
                  "tessera-server executable (default: next to this binary)");
  run->add_option(
      "-x,--env", flags->env,
      "NAME or NAME=VALUE: pass a variable to every process (repeatable) (default: none)");
  run->add_option(
      "--hostfile", flags->hostfile,
      "Spread processes over the hosts in FILE (lines `host [slots=N]`) (default: none, "
      "every process on this host)");
  run->add_option("--ssh", flags->ssh, "Command that runs a command on a host")
      ->capture_default_str();
  run->add_flag("--from-env", flags->from_env,
                "Become one process of the job, chosen by the srun/mpirun rank");
  run->add_flag("--insecure", flags->insecure,
                "With --from-env: run without TESSERA_JOB_SECRET, unauthenticated (anyone who "
                "reaches the job's ports can join it)");
  run->add_flag("--no-prefix", flags->no_prefix,
                "With --from-env: become the process (exec) instead of relaying its output with "
                "its label in front of every line (`[worker 0] `)");
  run->add_option("--coordinator", flags->coordinator,
                  "With --from-env: HOST[:PORT] of the coordinator (rank 0) (default: from the "
                  "srun/mpirun environment; the port derived from the job's id, and required "
                  "when there is none)");
  run->add_option("--startup-timeout", flags->startup_timeout_s,
                  "Seconds the coordinator has to publish its endpoint")
      ->capture_default_str();
  run->add_option("--grace-period", flags->grace_period_s,
                  "Seconds between SIGTERM and SIGKILL when stopping processes")
      ->capture_default_str();
  run->add_option("--heartbeat-timeout", flags->heartbeat_timeout_s,
                  "Seconds within which a process that stops answering is reported and the job "
                  "stopped (0: no liveness checks); passed as TESSERA_HEARTBEAT_TIMEOUT")
      ->capture_default_str();
  run->add_option("--checkpoint-dir", flags->checkpoint.dir,
                  "Write checkpoints of the program's state here, at loop boundaries (a directory "
                  "every host shares) (default: none)");
  run->add_option("--checkpoint-interval", flags->checkpoint.interval_seconds,
                  "Seconds between checkpoints (0: at every loop boundary)")
      ->capture_default_str();
  run->add_flag("--resume", flags->checkpoint.resume,
                "Continue from the newest complete checkpoint in --checkpoint-dir");
  run->add_option("--max-restarts", flags->checkpoint.max_restarts,
                  "Restart a job that fails (a process killed, hung or lost) from its newest "
                  "checkpoint, up to N times")
      ->capture_default_str();
}

// --env NAME (forward the launcher's value) or NAME=VALUE.
Result<tl::EnvList> ParseEnvFlags(const std::vector<std::string>& flags) {
  tl::EnvList env;
  for (const std::string& flag : flags) {
    size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      env.emplace_back(flag.substr(0, eq), flag.substr(eq + 1));
      continue;
    }
    const char* value = std::getenv(flag.c_str());
    if (value == nullptr) {
      return Status::InvalidArgument("--env " + flag + ": " + flag +
                                     " is not set in the launcher's environment");
    }
    env.emplace_back(flag, value);
  }
  return env;
}

int RunFromEnv(const RunFlags& flags, const CLI::App& run, tl::JobOptions job) {
  tl::FromEnvOptions options;
  if (run.count("--coordinator") > 0) options.coordinator = flags.coordinator;
  if (run.count("--bind") > 0) options.bind_host = flags.bind;
  if (run.count("--advertise") > 0) options.advertise = flags.advertise;
  tl::EnvMap env = tl::CurrentEnvironment();
  if (auto it = env.find(tl::kEnvJobSecret); it != env.end()) job.job_secret = it->second;
  Result<tl::ProcessSpec> spec = tl::SpecFromTaskRank(job, options, env);
  if (!spec.ok()) return Fail(kUsageError, spec.status().message());
  // The tasks cannot agree on a secret by themselves; without one the job is an open door.
  if (job.job_secret.empty() && !flags.insecure) {
    return Fail(kUsageError,
                "--from-env: TESSERA_JOB_SECRET is not set; export the same secret to every task "
                "(see docs/security.md), or pass --insecure to run unauthenticated");
  }
  // A guessable secret is as open a door as none: only --insecure runs with one.
  if (!job.job_secret.empty()) {
    if (Status strong = tessera::CheckSecretStrength(job.job_secret); !strong.ok()) {
      if (!flags.insecure) {
        return Fail(kUsageError, "--from-env: TESSERA_JOB_SECRET is too weak: " + strong.message() +
                                     "; or pass --insecure to run with it anyway");
      }
      spdlog::warn(
          "--insecure: TESSERA_JOB_SECRET is too weak ({}); anyone who guesses it can "
          "join the job or send it data",
          strong.message());
    }
  }
  if (job.job_secret.empty()) {
    spdlog::warn(
        "--insecure: TESSERA_JOB_SECRET is not set; the job runs unauthenticated, "
        "anyone who can reach its ports can join it or send it data");
  }
  spdlog::debug("--from-env: this task is {}", spec->Label());
  if (flags.no_prefix) {
    Status s = tl::ExecSpec(*spec);
    return Fail(kStartError, s.message());
  }
  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill the task before its process
  tl::RelayIo io;
  io.cancel_fd = InstallCancelHandlers();
  Result<int> code = tl::RunRelayed(*spec, io);
  if (!code.ok()) return Fail(kStartError, spec->Label() + ": " + code.status().message());
  return *code;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("tessera");
  logger->set_pattern("tessera: %v");
  spdlog::set_default_logger(logger);

  // Everything after the first "--" is the program; the launcher never parses it.
  int split = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  }
  std::vector<std::string> program;
  if (split >= 0) {
    for (int i = split + 1; i < argc; ++i) program.emplace_back(argv[i]);
  }

  CLI::App app{"tessera: starts and supervises a Tessera job (coordinator, servers, workers)"};
  app.set_version_flag("--version", std::string("tessera ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();  // before add_subcommand, which copies it
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand(
      "run", "Run PROGRAM as W workers with S servers: tessera run -w W -s S [options] -- "
             "PROGRAM [ARGS...]");
  run->footer(
      "Everything after `--` is the program and its arguments. Exit code: the job's (the first\n"
      "failing process's status, 128+N for signal N, 0 when every worker succeeded); 2 for bad\n"
      "usage; 1 when the job could not start. See docs/running.md.");
  RunFlags flags;
  AddRunFlags(run, &flags);

  try {
    app.parse(split >= 0 ? split : argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Without `--` the program shows up as an unexpected argument: say what is really missing.
    if (split < 0 && dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      return Fail(kUsageError, std::string(kMissingDashes) + " (" + e.what() + ")");
    }
    return Fail(kUsageError, std::string(e.what()) + " (see `tessera run --help`)");
  }
  if (split < 0) return Fail(kUsageError, kMissingDashes);
  if (program.empty()) return Fail(kUsageError, "no program after `--`");
  if (Status s = tessera::SetLogLevel(flags.log_level); !s.ok()) {
    return Fail(kUsageError, "--log-level: " + s.message());
  }
  spdlog::set_level(spdlog::get_level());
  logger->set_level(spdlog::get_level());
  if (flags.startup_timeout_s <= 0 || flags.grace_period_s < 0) {
    return Fail(kUsageError, "--startup-timeout must be > 0 and --grace-period >= 0");
  }
  if (!(flags.heartbeat_timeout_s == 0 ||
        (flags.heartbeat_timeout_s >= 0.1 && flags.heartbeat_timeout_s <= 86400))) {
    return Fail(kUsageError,
                "--heartbeat-timeout must be 0 (no checks) or between 0.1 and "
                "86400 seconds");
  }

  if (Status s = tl::PrepareCheckpointFlags(&flags.checkpoint); !s.ok()) {
    return Fail(kUsageError, s.message());
  }
  if (flags.from_env && flags.checkpoint.max_restarts > 0) {
    return Fail(kUsageError, "--max-restarts does not apply with --from-env (srun/mpirun start "
                             "the tasks; rerun the job with --resume)");
  }

  tl::JobOptions job;
  job.num_workers = flags.workers;
  job.num_servers = flags.servers;
  job.program = program;
  job.bind_host = flags.bind;
  job.log_level = flags.log_level;
  job.heartbeat_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(flags.heartbeat_timeout_s * 1000)));
  job.ssh_command = tl::SplitCommand(flags.ssh);
  job.server_bin = flags.server_bin.empty() ? SelfDirectory() + "/tessera-server" : flags.server_bin;
  Result<tl::EnvList> env = ParseEnvFlags(flags.env);
  if (!env.ok()) return Fail(kUsageError, env.status().message());
  job.extra_env = *env;
  for (auto& var : tl::CheckpointEnv(flags.checkpoint)) job.extra_env.push_back(std::move(var));
  if (char cwd[PATH_MAX]; ::getcwd(cwd, sizeof(cwd)) != nullptr) job.working_dir = cwd;

  if (flags.workers < 1 || flags.servers < 1) {
    return Fail(kUsageError, tl::ValidateJobOptions(job).message());
  }
  if (run->count("--advertise") > 0 && !tl::IsWildcardHost(flags.bind)) {
    return Fail(kUsageError, "--advertise applies with a wildcard --bind (0.0.0.0 or ::); with "
                             "--bind " + flags.bind + " processes advertise that address");
  }
  if (run->count("--advertise") > 0 && tl::IsWildcardHost(flags.advertise)) {
    return Fail(kUsageError, "--advertise " + flags.advertise +
                                 ": give an address other hosts can connect to, not a wildcard");
  }
  if (flags.from_env && !flags.hostfile.empty()) {
    return Fail(kUsageError, "--from-env and --hostfile cannot be combined");
  }
  if (!flags.from_env && run->count("--coordinator") > 0) {
    return Fail(kUsageError, "--coordinator only applies with --from-env");
  }
  if (!flags.from_env && flags.no_prefix) {
    return Fail(kUsageError, "--no-prefix only applies with --from-env");
  }
  if (!flags.from_env && flags.insecure) {
    return Fail(kUsageError,
                "--insecure only applies with --from-env (tessera run makes a fresh "
                "secret for every other job)");
  }

  // Check the executables here, so that a typo fails before anything starts.
  Result<std::string> program_path = tl::ResolveExecutable(job.program[0]);
  if (!program_path.ok()) {
    return Fail(kUsageError, "cannot run the program: " + program_path.status().message());
  }
  Result<std::string> server_path = tl::ResolveExecutable(job.server_bin);
  if (!server_path.ok()) {
    return Fail(kUsageError, "cannot run tessera-server: " + server_path.status().message() +
                                 " (pass --server-bin PATH)");
  }

  if (flags.from_env) return RunFromEnv(flags, *run, job);

  if (!flags.hostfile.empty()) {
    Result<std::vector<tl::HostEntry>> hosts = tl::ReadHostfile(flags.hostfile);
    if (!hosts.ok()) return Fail(kUsageError, hosts.status().message());
    job.hosts = *hosts;
    for (tl::HostEntry& host : job.hosts) {
      Result<std::string> address = tl::ResolveHostAddress(host.host);
      if (!address.ok()) {
        return Fail(kUsageError, flags.hostfile + ": " + address.status().message());
      }
      host.address = *address;
      if (tl::IsLoopbackHost(host.address) && !tl::IsLoopbackHost(host.host)) {
        spdlog::warn("host '{}' resolves to {} here, a loopback address: processes there will "
                     "not be reachable from other hosts (check /etc/hosts)",
                     host.host, host.address);
      }
    }
  }
  job.advertise_host = flags.advertise;
  if (tl::IsWildcardHost(job.bind_host) && job.advertise_host.empty()) {
    // Local processes are reached at this machine's address on the route to the other hosts.
    for (const tl::HostEntry& host : job.hosts) {
      if (tl::IsLoopbackHost(host.address)) continue;
      Result<std::string> toward = tl::LocalAddressToward(host.address);
      if (!toward.ok()) {
        return Fail(kUsageError, "--bind " + job.bind_host + ": " + toward.status().message() +
                                     "; pass --advertise ADDR");
      }
      job.advertise_host = *toward;
      break;
    }
  }
  if (!job.advertise_host.empty()) {
    spdlog::debug("local processes advertise {} (bound to {})", job.advertise_host, job.bind_host);
  }
  if (Status s = tl::ValidateJobOptions(job); !s.ok()) return Fail(kUsageError, s.message());
  Result<std::string> secret = tl::GenerateJobSecret();
  if (!secret.ok()) return Fail(kStartError, secret.status().message());
  job.job_secret = *secret;

  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill the launcher mid-job
  tl::RunOptions options;
  options.job = job;
  options.startup_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.startup_timeout_s * 1000));
  options.grace_period =
      std::chrono::milliseconds(static_cast<int64_t>(flags.grace_period_s * 1000));
  options.job.remote_kill_after_seconds = static_cast<int>(std::ceil(flags.grace_period_s));
  tl::RunIo io;
  io.cancel_fd = InstallCancelHandlers();
  Result<int> code = tl::RunJobWithRestarts(options, io, flags.checkpoint.max_restarts,
                                            [] { return g_cancelled != 0; });
  if (!code.ok()) return Fail(kStartError, code.status().message());
  return *code;
}
