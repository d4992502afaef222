// The job a worker process was started into, as the launcher describes it in the environment
// (docs/running.md): TESSERA_ROLE, TESSERA_RANK, TESSERA_NUM_WORKERS, TESSERA_NUM_SERVERS,
// TESSERA_COORDINATOR, TESSERA_JOB_SECRET.
#ifndef TESSERA_CLIENT_JOB_ENVIRONMENT_H_
#define TESSERA_CLIENT_JOB_ENVIRONMENT_H_

#include <optional>

#include "tessera/client/client.h"
#include "tessera/common/status.h"

namespace tessera {

struct JobEnvironment {
  int rank = 0;
  int num_workers = 1;
  int num_servers = 1;
  ClientOptions client;  // rank, coordinator and secret filled in
};

// The job this process belongs to; std::nullopt when it was not started by a launcher (no
// TESSERA_COORDINATOR), so the program runs on its own. InvalidArgument when the variables are
// present but malformed or this process is not a worker.
// Managed communication comes from TESSERA_COMM_POLICY (off, fifo, random, relative-magnitude)
// and TESSERA_COMM_BYTES_PER_SECOND, the job's budget, of which each worker gets 1/W.
Result<std::optional<JobEnvironment>> JobEnvironmentFromEnv();

}  // namespace tessera

#endif  // TESSERA_CLIENT_JOB_ENVIRONMENT_H_
