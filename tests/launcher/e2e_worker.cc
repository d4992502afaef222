// A worker for the launcher's end-to-end test with the real tessera-server: joins the job from
// the environment `tessera run` sets (TESSERA_RANK, TESSERA_NUM_WORKERS, TESSERA_COORDINATOR,
// TESSERA_JOB_SECRET), adds rank+1 to its own column of a shared row, waits at a barrier, and
// checks it sees every worker's addition. Prints "worker R saw all N workers" and exits 0; exits
// 1 on any error, or with status $E2E_FAIL_RANK_STATUS when TESSERA_RANK == $E2E_FAIL_RANK (after
// the barrier, to test that the launcher stops the rest of the job).
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "tessera/client/client.h"
#include "tessera/common/logging.h"

namespace {

std::string Env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

int Fail(int rank, const tessera::Status& s) {
  std::cerr << "worker " << rank << ": " << s.ToString() << std::endl;
  return 1;
}

}  // namespace

int main() {
  (void)tessera::SetLogLevel(Env("TESSERA_LOG_LEVEL", "warn"));
  tessera::ClientOptions options;
  options.rank = std::atoi(Env("TESSERA_RANK", "0").c_str());
  options.coordinator = Env("TESSERA_COORDINATOR");
  options.secret = Env("TESSERA_JOB_SECRET");
  options.timeout = std::chrono::seconds(20);
  const int workers = std::atoi(Env("TESSERA_NUM_WORKERS", "1").c_str());
  const int rank = options.rank;

  zmq::context_t context;
  tessera::Client client(options, context);
  if (auto s = client.Start(); !s.ok()) return Fail(rank, s);
  tessera::TableSpec spec;
  spec.id = 1;
  spec.name = "launcher_e2e";
  spec.value_type = tessera::ValueType::kInt64;
  spec.num_rows = 1;
  spec.width = static_cast<uint32_t>(workers);
  if (auto s = client.CreateTable(spec); !s.ok()) return Fail(rank, s);
  if (auto s = client.Inc<int64_t>(1, 0, static_cast<uint32_t>(rank), rank + 1); !s.ok()) {
    return Fail(rank, s);
  }
  if (auto s = client.Clock(0); !s.ok()) return Fail(rank, s);
  if (auto s = client.Barrier(); !s.ok()) return Fail(rank, s);
  std::vector<int64_t> row;
  if (auto s = client.Get<int64_t>(0, 1, 0, &row); !s.ok()) return Fail(rank, s);
  for (int w = 0; w < workers; ++w) {
    if (row.at(w) != w + 1) {
      std::cerr << "worker " << rank << ": column " << w << " = " << row.at(w) << ", expected "
                << w + 1 << std::endl;
      return 1;
    }
  }
  std::cout << "worker " << rank << " saw all " << workers << " workers" << std::endl;
  if (Env("E2E_FAIL_RANK", "-1") == std::to_string(rank)) {
    return std::atoi(Env("E2E_FAIL_RANK_STATUS", "1").c_str());
  }
  if (auto s = client.Leave(); !s.ok()) return Fail(rank, s);
  return 0;
}
