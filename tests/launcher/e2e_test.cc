// `tessera run` with the real tessera-server and workers that use the client library: the
// coordinator publishes its endpoint, servers and workers find it, the job runs, ends, and a
// failing worker still stops everything.
#include <signal.h>

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

}  // namespace
}  // namespace tessera::launcher::testing
