// Real processes over tcp on loopback: a coordinator and servers (tessera-server) and worker
// processes (ps_stress_worker), each worker with several threads.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  EXPECT_EQ(rc, 0) << "cannot start " << args[0];
  return pid;
}

// Waits for `pid` until `deadline`; kills it and returns -1 if it is still running then.
int WaitFor(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a child, bounded
  }
}

// Reads the coordinator's endpoint once it has written the file (atomically, by rename).
std::string WaitForEndpoint(const fs::path& file, pid_t coordinator) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(file)) {
      std::ifstream in(file);
      std::string ep;
      in >> ep;
      return ep;
    }
    int status;
    if (waitpid(coordinator, &status, WNOHANG) == coordinator) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

TEST(MultiProcessTest, FourWorkerProcessesTimesFourThreadsAreExactUnderBsp) {
  const std::string server_bin = TESSERA_SERVER_BIN;
  const std::string worker_bin = TESSERA_STRESS_WORKER_BIN;
  fs::path dir = fs::temp_directory_path() / ("tessera-mp-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path endpoint_file = dir / "coordinator";
  const std::string secret = "mp-secret";
  constexpr int kServers = 2, kWorkers = 4;

  pid_t coordinator =
      Spawn({server_bin, "--role", "coordinator", "--listen", "tcp://127.0.0.1:0",
             "--endpoint-file", endpoint_file.string(), "--num-servers", std::to_string(kServers),
             "--num-workers", std::to_string(kWorkers), "--secret", secret, "--log-level", "warn"});
  std::string endpoint = WaitForEndpoint(endpoint_file, coordinator);
  ASSERT_FALSE(endpoint.empty()) << "coordinator did not publish its endpoint";
  std::vector<pid_t> servers, workers;
  for (int i = 0; i < kServers; ++i) {
    servers.push_back(
        Spawn({server_bin, "--role", "server", "--rank", std::to_string(i), "--coordinator",
               endpoint, "--secret", secret, "--log-level", "warn"}));
  }
  for (int i = 0; i < kWorkers; ++i) {
    // 4 threads x 5 clocks x 25000 = 125k increments per thread, 500k per process.
    workers.push_back(
        Spawn({worker_bin, "--coordinator", endpoint, "--rank", std::to_string(i), "--secret",
               secret, "--threads", "4", "--workers", std::to_string(kWorkers), "--clocks", "5",
               "--incs-per-clock", "25000"}));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  for (int i = 0; i < kWorkers; ++i) EXPECT_EQ(WaitFor(workers[i], deadline), 0) << "worker " << i;
  // Once every worker left, the coordinator ends the job and the servers exit by themselves.
  for (int i = 0; i < kServers; ++i) EXPECT_EQ(WaitFor(servers[i], deadline), 0) << "server " << i;
  EXPECT_EQ(WaitFor(coordinator, deadline), 0);
  fs::remove_all(dir);
}

}  // namespace
