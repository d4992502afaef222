#include "tessera/client/job_environment.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string>

#include "tessera/transport/liveness.h"

namespace tessera {
namespace {

template <typename Int = int>
Result<Int> IntVar(const char* name, Int min_value) {
  const char* v = std::getenv(name);
  if (v == nullptr) return Status::InvalidArgument(fmt::format("{} is not set", name));
  std::string s(v);
  Int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < min_value) {
    return Status::InvalidArgument(
        fmt::format("{}='{}' is not an integer >= {}", name, s, min_value));
  }
  return value;
}

}  // namespace

Result<std::optional<JobEnvironment>> JobEnvironmentFromEnv() {
  const char* coordinator = std::getenv("TESSERA_COORDINATOR");
  if (coordinator == nullptr || *coordinator == '\0') return std::optional<JobEnvironment>();
  const char* role = std::getenv("TESSERA_ROLE");
  if (role != nullptr && std::string(role) != "worker") {
    return Status::InvalidArgument(
        fmt::format("TESSERA_ROLE is '{}', but this program is a worker", role));
  }
  JobEnvironment env;
  auto rank = IntVar("TESSERA_RANK", 0);
  auto workers = IntVar("TESSERA_NUM_WORKERS", 1);
  auto servers = IntVar("TESSERA_NUM_SERVERS", 1);
  for (const Status& s : {rank.status(), workers.status(), servers.status()}) {
    if (!s.ok()) return s;
  }
  if (*rank >= *workers) {
    return Status::InvalidArgument(
        fmt::format("TESSERA_RANK={} but TESSERA_NUM_WORKERS={}", *rank, *workers));
  }
  env.rank = *rank;
  env.num_workers = *workers;
  env.num_servers = *servers;
  env.client.rank = *rank;
  env.client.coordinator = coordinator;
  if (const char* secret = std::getenv("TESSERA_JOB_SECRET")) env.client.secret = secret;
  auto comm = CommOptionsFromEnv(env.num_workers);
  if (!comm.ok()) return comm.status();
  env.client.comm = *comm;
  auto heartbeat_timeout = HeartbeatTimeoutFromEnv();
  if (!heartbeat_timeout.ok()) return heartbeat_timeout.status();
  env.client.heartbeat_timeout = *heartbeat_timeout;
  if (std::getenv("TESSERA_CACHE_ROWS") != nullptr) {
    auto cache_rows = IntVar<uint64_t>("TESSERA_CACHE_ROWS", 0);
    if (!cache_rows.ok()) return cache_rows.status();
    env.client.cache_rows = *cache_rows;
  }
  return std::optional<JobEnvironment>(std::move(env));
}

}  // namespace tessera
