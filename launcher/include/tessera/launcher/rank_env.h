// Roles under an existing launcher (`srun`, `mpirun`): `tessera run --from-env` runs in every task
// and turns the task's rank into one Tessera process.
//
// Rank mapping (with S servers and W workers, the task count must be 1 + S + W):
//   rank 0            coordinator, listening on the coordinator endpoint
//   ranks 1 .. S      server 0 .. S-1
//   ranks S+1 .. S+W  worker 0 .. W-1
//
// Coordinator endpoint: tcp://HOST:PORT from --coordinator HOST[:PORT] when given; otherwise
// HOST is SLURM_LAUNCH_NODE_IPADDR under Slurm (rank 0 must run on the node srun was started on,
// which is the default inside sbatch), or 127.0.0.1 under OpenMPI when all ranks are on one node
// (OMPI_COMM_WORLD_LOCAL_SIZE == OMPI_COMM_WORLD_SIZE). PORT, unless given, is the job's own
// (JobCoordinatorPort), so that two jobs on one node do not collide; without a job id to derive
// it from, --coordinator HOST:PORT is required (a fixed port would collide silently).
//
// Binding to a wildcard (--bind 0.0.0.0): every process advertises --advertise ADDR, else its
// node's address toward the coordinator (rank 0: the coordinator's address), never 0.0.0.0.
#ifndef TESSERA_LAUNCHER_RANK_ENV_H_
#define TESSERA_LAUNCHER_RANK_ENV_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "tessera/common/status.h"
#include "tessera/launcher/job.h"
#include "tessera/launcher/net.h"

namespace tessera::launcher {

// Job ports are kDefaultCoordinatorPort + (hash of the job id) % kCoordinatorPortSpan.
inline constexpr int kDefaultCoordinatorPort = 47017;
inline constexpr int kCoordinatorPortSpan = 10000;

using EnvMap = std::map<std::string, std::string>;

// The current process's environment as a map.
EnvMap CurrentEnvironment();

struct TaskRank {
  int rank = 0;
  int size = 0;
  std::string source;  // "slurm" or "openmpi"
};

// Reads SLURM_PROCID/SLURM_NTASKS, else OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE.
// NotFound when neither pair is set; InvalidArgument when a value is malformed.
Result<TaskRank> DetectTaskRank(const EnvMap& env);

// The coordinator port of the job the task belongs to: derived from the launcher's job id, the
// same in every task of one job and (almost always) different between jobs: SLURM_JOB_ID and
// SLURM_STEP_ID under Slurm; under OpenMPI its job id (OMPI_MCA_ess_base_jobid, or PMIX_NAMESPACE
// for OpenMPI 5). nullopt when no job id is set. `source` ("slurm", "openmpi") is
// TaskRank::source.
std::optional<int> JobCoordinatorPort(const EnvMap& env, const std::string& source);

struct FromEnvOptions {
  // --coordinator HOST[:PORT]. Default: derived from the environment (see above).
  std::optional<std::string> coordinator;
  // --bind. Default: the coordinator's host (as an address) for the coordinator; for servers
  // and workers, this node's address toward the coordinator (127.0.0.1 when it is on loopback).
  std::optional<std::string> bind_host;
  // --advertise: the address peers reach this task's process at when it binds to a wildcard.
  // Default: as described at the top.
  std::optional<std::string> advertise;
  // How this node's address toward a host is found. Default: LocalAddressToward (net.h);
  // tests substitute their own.
  std::function<Result<std::string>(std::string_view host)> local_address_toward =
      LocalAddressToward;
  // How a host name becomes an address. Default: ResolveHostAddress (net.h).
  std::function<Result<std::string>(std::string_view host)> resolve = ResolveHostAddress;
};

// The process this task must become. job.program, server_bin, log_level, job_secret and
// extra_env come from `job`; job.hosts and job.bind_host are ignored.
Result<ProcessSpec> SpecFromTaskRank(const JobOptions& job, const FromEnvOptions& options,
                                     const EnvMap& env);

// Replaces the current process by `spec` (local), with spec.env added to the environment.
// Returns only on failure.
Status ExecSpec(const ProcessSpec& spec);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_RANK_ENV_H_
