// A worker whose main thread is busy for a long time (BUSY_MS: a long load, or a long loop body)
// while it is in a job with heartbeats: joins from the environment like a Tessera program
// (JobEnvironmentFromEnv, so heartbeats are on), then spins (even ranks) or blocks in a system
// call (odd ranks) for BUSY_MS, meets the other workers at a barrier and leaves. Exits 0, or 1
// with the error. With BUSY_EXIT=N it exits with N right after the busy period, without leaving.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "tessera/client/client.h"
#include "tessera/client/job_environment.h"
#include "tessera/common/logging.h"

namespace {

int Fail(const tessera::Status& s) {
  std::cerr << "busy_worker: " << s.ToString() << std::endl;
  return 1;
}

}  // namespace

int main() {
  const char* level = std::getenv("TESSERA_LOG_LEVEL");
  (void)tessera::SetLogLevel(level != nullptr ? level : "warn");
  auto env = tessera::JobEnvironmentFromEnv();
  if (!env.ok()) return Fail(env.status());
  if (!env->has_value()) return Fail(tessera::Status::InvalidArgument("not launched"));
  zmq::context_t context;
  tessera::Client client((*env)->client, context);
  if (auto s = client.Start(); !s.ok()) return Fail(s);
  const char* busy = std::getenv("BUSY_MS");
  const auto busy_for = std::chrono::milliseconds(busy != nullptr ? std::atoi(busy) : 0);
  const auto until = std::chrono::steady_clock::now() + busy_for;
  if ((*env)->rank % 2 == 0) {
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;  // a long loop body
  } else {
    std::this_thread::sleep_until(until);  // blocked in the kernel, like a slow read
  }
  if (const char* code = std::getenv("BUSY_EXIT")) std::_Exit(std::atoi(code));
  if (auto s = client.Barrier(); !s.ok()) return Fail(s);
  if (auto s = client.Leave(); !s.ok()) return Fail(s);
  std::cout << "worker " << (*env)->rank << " done" << std::endl;
  return 0;
}
