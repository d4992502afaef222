#include "tessera/launcher/rank_env.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>

extern char** environ;  // POSIX: the process environment.

namespace tessera::launcher {
namespace {

Result<int> ParseNonNegative(const EnvMap& env, const std::string& name) {
  const std::string& text = env.at(name);
  int value = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    return Status::InvalidArgument(name + " must be a non-negative integer, got '" + text + "'");
  }
  return value;
}

std::optional<std::string> Get(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

struct HostPort {
  std::string host;
  int port = 0;  // 0: not given
};

// FNV-1a: stable across builds and hosts (std::hash need not be).
uint64_t StableHash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

Result<HostPort> ParseHostPort(std::string text) {
  constexpr std::string_view kTcp = "tcp://";
  if (text.substr(0, kTcp.size()) == kTcp) text = text.substr(kTcp.size());
  HostPort hp;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    hp.host = text;
  } else {
    hp.host = text.substr(0, colon);
    std::string port = text.substr(colon + 1);
    int value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value < 1 ||
        value > 65535) {
      return Status::InvalidArgument("bad port in --coordinator '" + text + "'");
    }
    hp.port = value;
  }
  if (hp.host.empty()) return Status::InvalidArgument("no host in --coordinator '" + text + "'");
  return hp;
}

}  // namespace

std::optional<int> JobCoordinatorPort(const EnvMap& env, const std::string& source) {
  std::string id;
  if (source == "slurm" && Get(env, "SLURM_JOB_ID")) {
    // Steps of one job may run at once on a node (srun & srun &): the step is part of the id.
    id = "slurm:" + *Get(env, "SLURM_JOB_ID") + "." + Get(env, "SLURM_STEP_ID").value_or("");
  } else if (source == "openmpi") {
    for (const char* name : {"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid",
                             "PMIX_NAMESPACE"}) {
      if (Get(env, name)) {
        id = std::string("openmpi:") + *Get(env, name);
        break;
      }
    }
  }
  if (id.empty()) return std::nullopt;
  return kDefaultCoordinatorPort + static_cast<int>(StableHash(id) % kCoordinatorPortSpan);
}

EnvMap CurrentEnvironment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

Result<TaskRank> DetectTaskRank(const EnvMap& env) {
  struct Source {
    const char* name;
    const char* rank_var;
    const char* size_var;
  };
  static constexpr Source kSources[] = {
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
  };
  for (const Source& source : kSources) {
    bool has_rank = env.count(source.rank_var) > 0;
    bool has_size = env.count(source.size_var) > 0;
    if (!has_rank && !has_size) continue;
    if (!has_rank || !has_size) {
      return Status::InvalidArgument(std::string(has_rank ? source.size_var : source.rank_var) +
                                     " is not set but " +
                                     (has_rank ? source.rank_var : source.size_var) + " is");
    }
    Result<int> rank = ParseNonNegative(env, source.rank_var);
    if (!rank.ok()) return rank.status();
    Result<int> size = ParseNonNegative(env, source.size_var);
    if (!size.ok()) return size.status();
    if (*rank >= *size) {
      return Status::InvalidArgument(std::string(source.rank_var) + "=" + std::to_string(*rank) +
                                     " is not below " + source.size_var + "=" +
                                     std::to_string(*size));
    }
    return TaskRank{*rank, *size, source.name};
  }
  return Status::NotFound(
      "--from-env: neither SLURM_PROCID/SLURM_NTASKS (srun) nor "
      "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (mpirun) is set");
}

Result<ProcessSpec> SpecFromTaskRank(const JobOptions& job, const FromEnvOptions& options,
                                     const EnvMap& env) {
  if (job.num_workers < 1 || job.num_servers < 1) {
    return Status::InvalidArgument("-w and -s must be at least 1");
  }
  Result<TaskRank> task = DetectTaskRank(env);
  if (!task.ok()) return task.status();
  const int expected = 1 + job.num_servers + job.num_workers;
  if (task->size != expected) {
    return Status::InvalidArgument(
        "--from-env: the job has " + std::to_string(task->size) + " tasks (" + task->source +
        ") but -s " + std::to_string(job.num_servers) + " -w " + std::to_string(job.num_workers) +
        " needs 1 coordinator + servers + workers = " + std::to_string(expected));
  }

  // Where the coordinator is.
  std::string coordinator_text;
  if (options.coordinator) {
    coordinator_text = *options.coordinator;
  } else if (task->source == "slurm" && Get(env, "SLURM_LAUNCH_NODE_IPADDR")) {
    coordinator_text = *Get(env, "SLURM_LAUNCH_NODE_IPADDR");
  } else if (task->source == "openmpi" && Get(env, "OMPI_COMM_WORLD_LOCAL_SIZE") &&
             *Get(env, "OMPI_COMM_WORLD_LOCAL_SIZE") == *Get(env, "OMPI_COMM_WORLD_SIZE")) {
    coordinator_text = "127.0.0.1";
  } else {
    return Status::InvalidArgument(
        "--from-env: cannot tell where the coordinator (rank 0) runs; pass --coordinator "
        "HOST[:PORT] with the address of rank 0's node");
  }
  Result<HostPort> coordinator = ParseHostPort(coordinator_text);
  if (!coordinator.ok()) return coordinator.status();
  if (coordinator->port == 0) {
    std::optional<int> port = JobCoordinatorPort(env, task->source);
    if (!port) {
      // Two such jobs on one node would share a fixed port, and the second would fail.
      return Status::InvalidArgument(
          "--from-env: no job id to derive this job's coordinator port from (" +
          std::string(task->source == "slurm"
                          ? "SLURM_JOB_ID is not set"
                          : "neither OMPI_MCA_ess_base_jobid nor PMIX_NAMESPACE is set") +
          "); pass --coordinator HOST:PORT, with the same free port in every task");
    }
    coordinator->port = *port;
  }
  const std::string endpoint =
      "tcp://" + coordinator->host + ":" + std::to_string(coordinator->port);

  JobOptions local = job;
  local.hosts.clear();
  ProcessSpec spec;
  const int rank = task->rank;
  if (rank == 0) {
    if (options.bind_host) {
      local.bind_host = *options.bind_host;
    } else {
      // ZeroMQ binds to addresses, not names.
      Result<std::string> address = options.resolve(coordinator->host);
      if (!address.ok()) return address.status();
      local.bind_host = *address;
    }
    if (IsWildcardHost(local.bind_host)) {
      if (options.advertise) {
        local.advertise_host = *options.advertise;
      } else {
        Result<std::string> address = options.resolve(coordinator->host);
        if (!address.ok()) return address.status();
        local.advertise_host = *address;
      }
    }
    std::string listen = "tcp://" + local.bind_host + ":" + std::to_string(coordinator->port);
    spec.role = Role::kCoordinator;
    spec.rank = 0;
    spec.argv = {job.server_bin,  "--role",        "coordinator",
                 "--listen",      listen,          "--num-servers",
                 std::to_string(job.num_servers), "--num-workers",
                 std::to_string(job.num_workers)};
    // Reuse the planner's environment, then point TESSERA_COORDINATOR at the fixed endpoint.
    spec.env = CoordinatorSpec(local, "").env;
    for (auto& [name, value] : spec.env) {
      if (name == kEnvCoordinator) value = endpoint;
    }
    std::erase_if(spec.env, [](const auto& kv) { return kv.first == kEnvEndpointFile; });
    return spec;
  }
  if (options.bind_host) {
    local.bind_host = *options.bind_host;
  } else if (IsLoopbackHost(coordinator->host)) {
    local.bind_host = "127.0.0.1";
  } else {
    Result<std::string> address = options.local_address_toward(coordinator->host);
    if (!address.ok()) {
      return Status(address.status().code(),
                    "--from-env: cannot find this node's address toward the coordinator (" +
                        address.status().message() + "); pass --bind ADDR");
    }
    local.bind_host = *address;
  }
  if (IsWildcardHost(local.bind_host)) {
    if (options.advertise) {
      local.advertise_host = *options.advertise;
    } else if (IsLoopbackHost(coordinator->host)) {
      local.advertise_host = "127.0.0.1";
    } else {
      Result<std::string> address = options.local_address_toward(coordinator->host);
      if (!address.ok()) {
        return Status(address.status().code(),
                      "--from-env: cannot find this node's address toward the coordinator to "
                      "advertise (" + address.status().message() + "); pass --advertise ADDR");
      }
      local.advertise_host = *address;
    }
  }
  if (local.program.empty()) local.program = {"true"};  // servers do not need it
  std::vector<ProcessSpec> members = MemberSpecs(local, endpoint);
  // Members are servers 0..S-1 then workers 0..W-1: exactly ranks 1..S+W.
  return members[rank - 1];
}

Status ExecSpec(const ProcessSpec& spec) {
  for (const auto& [name, value] : spec.env) {
    if (::setenv(name.c_str(), value.c_str(), 1) != 0) {
      return Status::Internal("setenv " + name + ": " + std::strerror(errno));
    }
  }
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  return Status::FailedPrecondition("cannot execute " + spec.argv[0] + ": " +
                                    std::strerror(errno));
}

}  // namespace tessera::launcher
