// Job planning for `tessera run`: which processes a job has, where they run, with which command
// line and environment. Pure functions of their inputs (no processes are started here), so the
// whole role/endpoint contract can be unit-tested. See docs/running.md for the contract.
//
// A job is 1 coordinator, S servers and W workers:
//   coordinator  tessera-server --role coordinator --listen tcp://BIND:0 --endpoint-file FILE
//                               --num-servers S --num-workers W
//   server i     tessera-server --role server --rank i --coordinator ENDPOINT
//   worker i     the user's program and its arguments
// and every process gets the TESSERA_* environment (kEnv* below).
#ifndef TESSERA_LAUNCHER_JOB_H_
#define TESSERA_LAUNCHER_JOB_H_

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/launcher/hostfile.h"

namespace tessera::launcher {

// Environment variables every process of a job receives.
inline constexpr char kEnvRole[] = "TESSERA_ROLE";              // coordinator|server|worker
inline constexpr char kEnvRank[] = "TESSERA_RANK";              // 0-based within the role
inline constexpr char kEnvNumWorkers[] = "TESSERA_NUM_WORKERS";
inline constexpr char kEnvNumServers[] = "TESSERA_NUM_SERVERS";
inline constexpr char kEnvCoordinator[] = "TESSERA_COORDINATOR";  // tcp://HOST:PORT
inline constexpr char kEnvBindHost[] = "TESSERA_BIND_HOST";
// Set when the bind host is a wildcard (0.0.0.0, ::): the address peers reach the process at.
inline constexpr char kEnvAdvertiseHost[] = "TESSERA_ADVERTISE_HOST";
inline constexpr char kEnvJobSecret[] = "TESSERA_JOB_SECRET";
inline constexpr char kEnvLogLevel[] = "TESSERA_LOG_LEVEL";
inline constexpr char kEnvHeartbeatTimeout[] = "TESSERA_HEARTBEAT_TIMEOUT";  // seconds; 0: off
// Coordinator only: where it writes its endpoint once bound (same as --endpoint-file).
inline constexpr char kEnvEndpointFile[] = "TESSERA_ENDPOINT_FILE";

enum class Role { kCoordinator, kServer, kWorker };

// "coordinator", "server", "worker".
std::string_view RoleName(Role role);

using EnvList = std::vector<std::pair<std::string, std::string>>;

// One process of a job.
struct ProcessSpec {
  Role role = Role::kWorker;
  int rank = 0;          // 0 for the coordinator
  std::string host;      // empty: this machine, started directly; else started with the ssh command
  std::vector<std::string> argv;  // argv[0] is the executable (a path, or a name looked up in PATH)
  EnvList env;           // set on top of the inherited environment (locally) or sent (remotely)

  // "coordinator", "server 0", "worker 1": the prefix of the process's log lines.
  std::string Label() const;
};

struct JobOptions {
  // Number of worker processes. REQUIRES: >= 1.
  int num_workers = 1;
  // Number of server processes. REQUIRES: >= 1.
  int num_servers = 1;
  // The user's program and its arguments. REQUIRES: non-empty. program[0] is used as given (a
  // path or a name looked up in PATH); see ResolveExecutable().
  std::vector<std::string> program;
  // The tessera-server executable. Default (filled by the driver): next to the tessera binary.
  std::string server_bin;
  // Address the coordinator listens on and local processes bind to. Default: loopback.
  std::string bind_host = "127.0.0.1";
  // With a wildcard bind_host: the address other hosts reach the local processes at (passed as
  // TESSERA_ADVERTISE_HOST, so that no process publishes tcp://0.0.0.0:PORT). The driver fills it
  // from --advertise, else with this machine's address toward the first other host. Empty: each
  // process uses the address its host name resolves to.
  std::string advertise_host;
  // Passed as TESSERA_LOG_LEVEL. Default: info.
  std::string log_level = "info";
  // Passed as TESSERA_JOB_SECRET; the driver generates one per job (GenerateJobSecret()).
  std::string job_secret;
  // Hosts from a hostfile. Default: empty, every process runs on this machine.
  std::vector<HostEntry> hosts;
  // Command that starts a process on a host: `<ssh_command...> HOST REMOTE_COMMAND`.
  // Default: ssh in batch mode (never prompts for a password).
  std::vector<std::string> ssh_command = {"ssh", "-o", "BatchMode=yes"};
  // Extra variables for every process (--env NAME[=VALUE]). Locally processes also inherit the
  // launcher's whole environment; remote processes get only these and the TESSERA_* ones.
  EnvList extra_env;
  // Directory remote processes start in. Default (filled by the driver): the launcher's cwd.
  std::string working_dir;
  // A remote process still running this long after its SIGTERM gets SIGKILL (the remote side of
  // the launcher's grace period). Default: 3.
  int remote_kill_after_seconds = 3;
  // Liveness: a process unheard for this long fails the job (docs/faults.md). Passed to every
  // process as TESSERA_HEARTBEAT_TIMEOUT (seconds); 0 turns the checks off. Default: 10 s.
  std::chrono::milliseconds heartbeat_timeout{10000};
};

// Checks counts, program, hosts and bind address. Does not touch the file system.
Status ValidateJobOptions(const JobOptions& options);

// The coordinator, which always runs on this machine and writes its endpoint to endpoint_file.
ProcessSpec CoordinatorSpec(const JobOptions& options, const std::string& endpoint_file);

// Servers (ranks 0..S-1) then workers (ranks 0..W-1), once the coordinator's endpoint is known.
// Without hosts all are local and bind to bind_host. With hosts, server i runs on hosts[i % H]
// and workers fill the hosts' slots in order (a host with slots=N takes N workers), wrapping
// around when W exceeds the total slots; each binds to its host's `address` (else its name).
// REQUIRES: ValidateJobOptions(options).ok().
std::vector<ProcessSpec> MemberSpecs(const JobOptions& options,
                                     const std::string& coordinator_endpoint);

// What to execute to start `spec`.
struct LaunchCommand {
  std::vector<std::string> argv;  // argv[0]: path or name looked up in PATH
  EnvList env;                    // added to the launcher's environment
  // Written to the process's stdin right after start (then stdin stays open until the job
  // stops). Used to hand the job secret to remote processes without putting it on a command line.
  std::string stdin_data;
  bool stdin_pipe = false;        // false: stdin is /dev/null
};

// Local spec: its argv and env. Remote spec: the ssh command, the host and one shell command line
// (RemoteCommandLine) that reads the secret from stdin, cds to working_dir and execs the process
// with its environment.
LaunchCommand MakeLaunchCommand(const ProcessSpec& spec, const JobOptions& options);

// The POSIX sh command line run on a remote host for `spec`:
//   IFS= read -r TESSERA_JOB_SECRET; export TESSERA_JOB_SECRET; cd /dir || exit 127;
//   exec 3<&0; setsid env TESSERA_ROLE=worker ... ./prog arg 3<&- & p=$!;
//   (trap '' HUP INT TERM; cat >/dev/null; kill -TERM -$p 2>/dev/null &&
//    { sleep 3; kill -KILL -$p 2>/dev/null; }) <&3 >/dev/null 2>&1 & exec 3<&-; wait $p
// It reads the secret from stdin, runs the process in working_dir with its environment in its
// own process group, and when stdin reaches EOF (the launcher closed it, or the connection
// dropped) stops that group with SIGTERM, then SIGKILL after kill_after_seconds. Its exit status
// is the process's (128 + N when killed by signal N). Needs a POSIX login shell and setsid
// (util-linux) on the host.
std::string RemoteCommandLine(const ProcessSpec& spec, const std::string& working_dir,
                              int kill_after_seconds);

// Quotes `word` for a POSIX shell: 'it'\''s'. Words of only safe characters are left as they are.
std::string ShellQuote(std::string_view word);

// Splits a command given as one string (--ssh "ssh -o BatchMode=yes") on whitespace.
std::vector<std::string> SplitCommand(std::string_view command);

// True for the addresses that mean "every interface": 0.0.0.0, *, :: and [::].
bool IsWildcardHost(std::string_view host);

// True for localhost, 127.0.0.0/8 and ::1.
bool IsLoopbackHost(std::string_view host);

// Finds an executable: a name with a '/' is checked as a path (relative to cwd), a bare name is
// searched in PATH. Returns the path to execute. NotFound / FailedPrecondition with a message
// naming `name` otherwise.
Result<std::string> ResolveExecutable(const std::string& name);

// 128 random bits from /dev/urandom as 32 hex digits.
Result<std::string> GenerateJobSecret();

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_JOB_H_
