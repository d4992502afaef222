// The output manners of a real `tessera run` job (docs/running.md, "Output"): --log-level
// reaches the coordinator, the servers and a program that does not read it itself; a program's
// stdout reaches the launcher line by line (not in 4 KiB bursts); every line carries its
// process's label; no colour codes go into a pipe; mf's progress lines carry an ETA.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tessera_harness.h"

namespace tessera::launcher::testing {
namespace {

// A free TCP port on loopback: bound, read, released (nothing listens there afterwards).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

class LauncherOutputTest : public TesseraHarness {
 protected:
  LauncherOutputTest() : TesseraHarness(TESSERA_LAUNCHER_BINARY) {}

  std::vector<std::string> Args(int workers, const std::string& level,
                                std::vector<std::string> program) {
    std::vector<std::string> args = {
        "run", "-w",           std::to_string(workers), "-s", "1", "--log-level",
        level, "--server-bin", TESSERA_SERVER_BINARY,   "--"};
    args.insert(args.end(), program.begin(), program.end());
    return args;
  }

  // Every line of `output` starts with one of the job's labels.
  static void ExpectEveryLineLabelled(const std::string& output) {
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      const bool labelled = line.rfind("[coordinator] ", 0) == 0 ||
                            line.rfind("[server ", 0) == 0 || line.rfind("[worker ", 0) == 0 ||
                            line.rfind("tessera: ", 0) == 0;
      EXPECT_TRUE(labelled) << "unlabelled line: '" << line << "'";
    }
  }
};

TEST_F(LauncherOutputTest, DebugLevelReachesCoordinatorServersAndTheProgram) {
  RunResult r = Run(Args(2, "debug", {TESSERA_OUTPUT_PROBE}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string all = r.out + r.err;
  // Debug lines of the coordinator (its list of peer endpoints), of the runtime inside the
  // program (its description of the context) and of the program itself. (A server logs nothing
  // at debug level in a job without tables; WarnLevelSilencesInfoEverywhere covers servers.)
  EXPECT_TRUE(Contains(LinesOf(all, "[coordinator] "), "peer mesh endpoints: ")) << all;
  EXPECT_TRUE(Contains(LinesOf(all, "[server 0] "), "serving at ")) << all;
  for (const char* worker : {"[worker 0] ", "[worker 1] "}) {
    EXPECT_TRUE(Contains(LinesOf(all, worker), "context: mode=distributed")) << all;
    EXPECT_TRUE(Contains(LinesOf(all, worker), "probe: debug line")) << all;
  }
  ExpectEveryLineLabelled(r.out);
  ExpectEveryLineLabelled(r.err);
}

TEST_F(LauncherOutputTest, WarnLevelSilencesInfoEverywhere) {
  RunResult r = Run(Args(1, "warn", {TESSERA_OUTPUT_PROBE}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string all = r.out + r.err;
  EXPECT_FALSE(Contains(all, "listening on ")) << all;     // the coordinator's info line
  EXPECT_FALSE(Contains(all, "serving at ")) << all;       // the server's
  EXPECT_FALSE(Contains(all, "probe: info line")) << all;  // the program's
  EXPECT_TRUE(Contains(LinesOf(all, "[worker 0] "), "probe: warning line")) << all;
  EXPECT_TRUE(Contains(r.out, "[worker 0] probe: first line\n")) << r.out;
}

TEST_F(LauncherOutputTest, ProgramOutputArrivesLineByLine) {
  const std::string go = dir_ + "/go";
  pid_t job = Start(Args(1, "info", {TESSERA_OUTPUT_PROBE}), {{"PROBE_GO_FILE", go}});
  // The probe holds its second line back until `go` exists, without flushing the first: the
  // first must reach the launcher's output on its own.
  const auto deadline = Clock::now() + seconds(60);
  bool seen = false;
  while (!seen && Clock::now() < deadline) {
    seen = Contains(Slurp("stdout.1"), "[worker 0] probe: first line\n");
    if (!seen) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(seen) << "the first line never arrived while the program ran";
  EXPECT_FALSE(Contains(Slurp("stdout.1"), "probe: second line"));
  std::ofstream(go) << "go\n";
  RunResult r = Wait(job, seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "[worker 0] probe: second line\n")) << r.out;
}

TEST_F(LauncherOutputTest, NoColourCodesIntoAPipeEvenOnAColourTerminalType) {
  RunResult r = Run(Args(1, "debug", {TESSERA_OUTPUT_PROBE}),
                    {{"TERM", "xterm-256color"}, {"COLORTERM", "truecolor"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out + r.err, "probe: warning line")) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find('\x1b'), std::string::npos) << r.out << r.err;
}

TEST_F(LauncherOutputTest, MfProgressLinesCarryAnEta) {
  // 40 users x 30 items, about half rated.
  std::ofstream ratings(dir_ + "/ratings.tsv");
  std::mt19937 rng(7);
  for (int u = 1; u <= 40; ++u) {
    for (int i = 1; i <= 30; ++i) {
      if (rng() % 2 == 0) ratings << u << '\t' << i << '\t' << 1 + rng() % 5 << "\t0\n";
    }
  }
  ratings.close();
  RunResult r =
      Run(Args(2, "info",
               {TESSERA_MF_BINARY, "--train", dir_ + "/ratings.tsv", "--epochs", "3", "-k", "4"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string progress = LinesOf(r.out, "[worker 0] epoch ");
  std::istringstream lines(progress);
  std::vector<std::string> epochs;
  for (std::string line; std::getline(lines, line);) epochs.push_back(line);
  ASSERT_EQ(epochs.size(), 3u) << r.out;
  EXPECT_TRUE(Contains(epochs[0], "  eta ")) << epochs[0];
  EXPECT_TRUE(Contains(epochs[1], "  eta ")) << epochs[1];
  EXPECT_FALSE(Contains(epochs[2], "eta")) << epochs[2];  // nothing left after the last epoch
  EXPECT_EQ(LinesOf(r.out, "[worker 1] epoch "), "") << r.out;
}

// A process that cannot reach the coordinator says so within seconds, naming the address.
TEST_F(LauncherOutputTest, AnUnreachableCoordinatorIsNamedWithinSeconds) {
  const int port = FreePort();  // nothing listens there
  ASSERT_GT(port, 0);
  // A runtime program joins through the liveness agent, which watches the connection.
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  pid_t task =
      Start({"run", "-w", "1", "-s", "1", "--from-env", "--coordinator",
             "127.0.0.1:" + std::to_string(port), "--server-bin", TESSERA_SERVER_BINARY, "--",
             TESSERA_OUTPUT_PROBE},
            {{"SLURM_PROCID", "2"},
             {"SLURM_NTASKS", "3"},
             {"TESSERA_JOB_SECRET", "e2e-secret-9f3c4b1a"}});
  const auto start = Clock::now();
  const std::string expected = "cannot reach the coordinator at " + endpoint;
  bool said = false;
  while (!said && Clock::now() - start < seconds(30)) {
    said = Contains(Slurp("stdout.1") + Slurp("stderr.1"), expected);
    if (!said) std::this_thread::sleep_for(milliseconds(20));
  }
  const auto took = Clock::now() - start;
  const std::string output = Slurp("stdout.1") + Slurp("stderr.1");
  EXPECT_TRUE(said) << output;
  EXPECT_LT(took, seconds(10)) << "the warning took " << std::chrono::duration<double>(took).count()
                               << " s";
  EXPECT_TRUE(Contains(output, "[worker 0] ")) << output;
  kill(task, SIGTERM);  // the task forwards it to the worker
  RunResult r = Wait(task, seconds(30));
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace tessera::launcher::testing
