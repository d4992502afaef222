// `tessera run` with the real tessera-server and workers that use the client library: the
// coordinator publishes its endpoint, servers and workers find it, the job runs, ends, and a
// failing worker still stops everything.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "tessera_harness.h"

namespace tessera::launcher::testing {
namespace {

class LauncherEndToEndTest : public TesseraHarness {
 protected:
  LauncherEndToEndTest() : TesseraHarness(TESSERA_LAUNCHER_BINARY) {}

  std::vector<std::string> Args(int w, int s) {
    return {"run", "-w", std::to_string(w), "-s", std::to_string(s), "--log-level", "info",
            "--server-bin", TESSERA_SERVER_BINARY, "--grace-period", "2", "--",
            TESSERA_E2E_WORKER};
  }
};

TEST_F(LauncherEndToEndTest, RealServersAndClientsRunAJob) {
  RunResult r = Run(Args(3, 2));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int w = 0; w < 3; ++w) {
    EXPECT_TRUE(Contains(r.out, "[worker " + std::to_string(w) + "] worker " + std::to_string(w) +
                                    " saw all 3 workers\n"))
        << r.out << r.err;
  }
  EXPECT_TRUE(Contains(r.out + r.err, "[coordinator] ")) << r.out << r.err;
  EXPECT_FALSE(Contains(r.err, "did not stop within")) << r.err;
  EXPECT_LT(r.elapsed, seconds(30));
}

TEST_F(LauncherEndToEndTest, AFailingWorkerStopsTheRealServers) {
  RunResult r = Run(Args(2, 1), {{"E2E_FAIL_RANK", "1"}, {"E2E_FAIL_RANK_STATUS", "7"}});
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "tessera: worker 1 (pid ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "exited with status 7; stopping the job")) << r.err;
  EXPECT_LT(r.elapsed, seconds(30));
}

TEST_F(LauncherEndToEndTest, ServersStartFromTheEnvironmentAlone) {
  std::vector<std::string> args = Args(2, 2);
  for (auto& a : args) {
    if (a == TESSERA_SERVER_BINARY) a = TESSERA_LAUNCHER_FAKES_DIR "/env_only_server.sh";
  }
  RunResult r = Run(args, {{"REAL_TESSERA_SERVER", TESSERA_SERVER_BINARY}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[worker 1] worker 1 saw all 2 workers\n")) << r.out << r.err;
}

TEST_F(LauncherEndToEndTest, HostfileJobOverSshWithRealServers) {
  std::ofstream(dir_ + "/hosts") << "localhost slots=1\n127.0.0.1 slots=1\n";
  std::vector<std::string> args = Args(2, 2);
  args.insert(args.begin() + 1, {"--hostfile", dir_ + "/hosts", "--ssh",
                                 TESSERA_LAUNCHER_FAKES_DIR "/fake_ssh.sh"});
  RunResult r = Run(args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[worker 0] worker 0 saw all 2 workers\n")) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[worker 1] worker 1 saw all 2 workers\n")) << r.out << r.err;
}

// A free TCP port on loopback: bound, read, released. The coordinator of a --from-env job listens
// on a port every task knows in advance, so the test cannot use port 0 there.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

TEST_F(LauncherEndToEndTest, FromEnvTasksFormAJobLikeSrunWouldStartThem) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  // srun -n 4 tessera run -w 2 -s 1 --from-env ...: every task at once, in any order.
  std::vector<pid_t> tasks;
  for (int rank : {3, 2, 1, 0}) {
    tasks.push_back(Start({"run", "-w", "2", "-s", "1", "--from-env", "--coordinator",
                           "127.0.0.1:" + std::to_string(port), "--server-bin",
                           TESSERA_SERVER_BINARY, "--", TESSERA_E2E_WORKER},
                          {{"SLURM_PROCID", std::to_string(rank)},
                           {"SLURM_NTASKS", "4"},
                           {"TESSERA_JOB_SECRET", "e2e-secret-9f3c4b1a"}}));
  }
  // Workers are ranks 3 and 2; the coordinator and the server end by themselves once the
  // workers have left.
  RunResult worker1 = Wait(tasks[0], seconds(30));
  RunResult worker0 = Wait(tasks[1], seconds(30));
  RunResult server = Wait(tasks[2], seconds(30));
  RunResult coordinator = Wait(tasks[3], seconds(30));
  EXPECT_EQ(worker0.exit_code, 0) << worker0.out << worker0.err;
  EXPECT_EQ(worker1.exit_code, 0) << worker1.out << worker1.err;
  // Each task relays its process's lines with the process's label in front, as `tessera run`.
  EXPECT_TRUE(Contains(worker0.out, "[worker 0] worker 0 saw all 2 workers\n")) << worker0.out;
  EXPECT_TRUE(Contains(worker1.out, "[worker 1] worker 1 saw all 2 workers\n")) << worker1.out;
  EXPECT_TRUE(Contains(coordinator.out + coordinator.err, "[coordinator] "))
      << coordinator.out << coordinator.err;
  EXPECT_EQ(server.exit_code, 0) << server.out << server.err;
  EXPECT_EQ(coordinator.exit_code, 0) << coordinator.out << coordinator.err;
  EXPECT_TRUE(Contains(coordinator.out + coordinator.err,
                       "listening on tcp://127.0.0.1:" + std::to_string(port)))
      << coordinator.out << coordinator.err;
}

// --no-prefix: the task becomes the process (exec), its lines go out as printed.
TEST_F(LauncherEndToEndTest, FromEnvNoPrefixExecsTheProcess) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<pid_t> tasks;
  for (int rank : {2, 1, 0}) {
    tasks.push_back(Start({"run", "-w", "1", "-s", "1", "--from-env", "--no-prefix",
                           "--coordinator", "127.0.0.1:" + std::to_string(port), "--server-bin",
                           TESSERA_SERVER_BINARY, "--", TESSERA_E2E_WORKER},
                          {{"SLURM_PROCID", std::to_string(rank)},
                           {"SLURM_NTASKS", "3"},
                           {"TESSERA_JOB_SECRET", "e2e-secret-9f3c4b1a"}}));
  }
  RunResult worker = Wait(tasks[0], seconds(30));
  RunResult server = Wait(tasks[1], seconds(30));
  RunResult coordinator = Wait(tasks[2], seconds(30));
  EXPECT_EQ(worker.exit_code, 0) << worker.out << worker.err;
  EXPECT_TRUE(Contains(worker.out, "worker 0 saw all 1 workers\n")) << worker.out;
  EXPECT_FALSE(Contains(worker.out, "[worker 0]")) << worker.out;
  EXPECT_EQ(server.exit_code, 0) << server.out << server.err;
  EXPECT_EQ(coordinator.exit_code, 0) << coordinator.out << coordinator.err;
}

}  // namespace
}  // namespace tessera::launcher::testing
