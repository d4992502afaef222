// End-to-end tests of build/bin/tessera: the real binary, with fakes/ standing in for
// tessera-server (fake_server.sh), the user program (fake_worker.sh) and ssh (fake_ssh.sh).
// Every wait is bounded; nothing sleeps for a fixed time to synchronize.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tessera_harness.h"

namespace tessera::launcher::testing {
namespace {

const std::string kFakes = TESSERA_LAUNCHER_FAKES_DIR;
const std::string kFakeServer = kFakes + "/fake_server.sh";
const std::string kFakeWorker = kFakes + "/fake_worker.sh";
const std::string kFakeSsh = kFakes + "/fake_ssh.sh";

class TesseraCliTest : public TesseraHarness {
 protected:
  TesseraCliTest() : TesseraHarness(TESSERA_LAUNCHER_BINARY) {}

  // Starts tessera, waits until the fakes wrote `ready_files` (bounded), creates the "go" file
  // that `await:` behaviours wait for (noting the time in go_), and waits for tessera to exit.
  RunResult RunOnceUp(const std::vector<std::string>& args,
                      const std::vector<std::string>& ready_files,
                      const std::map<std::string, std::string>& env = {}) {
    pid_t pid = Start(args, env);
    EXPECT_TRUE(WaitForFiles(ready_files, seconds(10))) << "the fakes did not come up";
    go_ = Clock::now();
    std::ofstream(dir_ + "/go") << "go\n";
    return Wait(pid);
  }

  // `tessera run -w W -s S --server-bin fake_server.sh EXTRA... -- fake_worker.sh BEHAVIOURS...`
  std::vector<std::string> RunArgs(int w, int s, const std::vector<std::string>& behaviours,
                                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"run", "-w", std::to_string(w), "-s", std::to_string(s),
                                     "--server-bin", kFakeServer};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(kFakeWorker);
    args.insert(args.end(), behaviours.begin(), behaviours.end());
    return args;
  }

  Clock::time_point go_;
};

// --- Running a job ---------------------------------------------------------------------------

TEST_F(TesseraCliTest, RunsTheJobAndPrefixesEveryLine) {
  RunResult r = Run(RunArgs(2, 2, {"print:2", "print:3"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LinesOf(r.out, "[worker 0] "),
            "[worker 0] line 1 of worker 0\n[worker 0] line 2 of worker 0\n")
      << r.out;
  EXPECT_EQ(LinesOf(r.out, "[worker 1] "),
            "[worker 1] line 1 of worker 1\n[worker 1] line 2 of worker 1\n"
            "[worker 1] line 3 of worker 1\n")
      << r.out;
  EXPECT_TRUE(Contains(r.out, "[coordinator] coordinator 0 up\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "[server 1] server 1 up\n")) << r.out;
  // stderr lines stay on stderr, prefixed too.
  EXPECT_TRUE(Contains(r.err, "[worker 1] a warning from worker 1\n")) << r.err;
  EXPECT_FALSE(Contains(r.out, "a warning")) << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line[0], '[') << line;
  EXPECT_LT(r.elapsed, seconds(10));
}

TEST_F(TesseraCliTest, EveryProcessGetsTheRoleAndEndpointContract) {
  RunResult r = Run(RunArgs(2, 2, {"print:1"}, {"--log-level", "warn"}),
                    {{"FAKE_ENDPOINT", "tcp://127.0.0.1:41233"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::string coordinator_args = Slurp("coordinator-0.args");
  EXPECT_TRUE(Contains(coordinator_args,
                       "--role coordinator --listen tcp://127.0.0.1:0 --endpoint-file "))
      << coordinator_args;
  EXPECT_TRUE(Contains(coordinator_args, "/coordinator.endpoint --num-servers 2 --num-workers 2"))
      << coordinator_args;
  EXPECT_EQ(Slurp("server-1.args"),
            "--role server --rank 1 --coordinator tcp://127.0.0.1:41233\n");
  EXPECT_EQ(Slurp("worker-1.args"), "print:1\n");

  const std::string secret = EnvFile("coordinator-0.env")["TESSERA_JOB_SECRET"];
  EXPECT_EQ(secret.size(), 32u);
  struct Expected {
    std::string file, role, rank;
  };
  for (const Expected& e : std::vector<Expected>{{"coordinator-0.env", "coordinator", "0"},
                                                 {"server-0.env", "server", "0"},
                                                 {"server-1.env", "server", "1"},
                                                 {"worker-0.env", "worker", "0"},
                                                 {"worker-1.env", "worker", "1"}}) {
    auto env = EnvFile(e.file);
    EXPECT_EQ(env["TESSERA_ROLE"], e.role) << e.file;
    EXPECT_EQ(env["TESSERA_RANK"], e.rank) << e.file;
    EXPECT_EQ(env["TESSERA_NUM_WORKERS"], "2") << e.file;
    EXPECT_EQ(env["TESSERA_NUM_SERVERS"], "2") << e.file;
    EXPECT_EQ(env["TESSERA_BIND_HOST"], "127.0.0.1") << e.file;
    EXPECT_EQ(env["TESSERA_JOB_SECRET"], secret) << e.file;
    EXPECT_EQ(env["TESSERA_LOG_LEVEL"], "warn") << e.file;
    if (e.role != "coordinator") {
      EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://127.0.0.1:41233") << e.file;
    }
  }

  // A fresh secret per job.
  RunResult again = Run(RunArgs(2, 2, {"print:1"}));
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_NE(EnvFile("worker-0.env")["TESSERA_JOB_SECRET"], secret);
}

TEST_F(TesseraCliTest, BindAndEnvPassthrough) {
  RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--bind", "127.0.0.2", "-x", "OMP_NUM_THREADS=3"}),
                    {{"FAKE_ENDPOINT", "tcp://127.0.0.2:5000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(Slurp("coordinator-0.args"), "--listen tcp://127.0.0.2:0"));
  EXPECT_EQ(EnvFile("worker-0.env")["TESSERA_BIND_HOST"], "127.0.0.2");
  // fake_worker records only TESSERA_*; check the passthrough through the server's argv-free env.
  RunResult env_dump = Run({"run", "-w", "1", "--server-bin", kFakeServer, "-x",
                            "OMP_NUM_THREADS=3", "--", "/bin/sh", "-c", "echo threads=$OMP_NUM_THREADS"});
  EXPECT_EQ(env_dump.exit_code, 0) << env_dump.err;
  EXPECT_TRUE(Contains(env_dump.out, "[worker 0] threads=3\n")) << env_dump.out;
}

TEST_F(TesseraCliTest, ManyLinesFromSeveralWorkersArriveWholeAndInOrder) {
  constexpr int kLines = 20000;  // well over the pipe and read buffer sizes
  RunResult r = Run(RunArgs(2, 1, {"print:" + std::to_string(kLines)}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int next[2] = {1, 1};
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    for (int w = 0; w < 2; ++w) {
      const std::string prefix = "[worker " + std::to_string(w) + "] line ";
      if (line.rfind(prefix, 0) != 0) continue;
      ASSERT_EQ(line, prefix + std::to_string(next[w]) + " of worker " + std::to_string(w));
      ++next[w];
    }
  }
  EXPECT_EQ(next[0], kLines + 1);
  EXPECT_EQ(next[1], kLines + 1);
}

TEST_F(TesseraCliTest, LastLineWithoutNewlineIsStillPrinted) {
  RunResult r = Run(RunArgs(1, 1, {"nonl"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "[worker 0] no newline at the end\n")) << r.out;
}

// --- Failures stop the job -------------------------------------------------------------------

TEST_F(TesseraCliTest, WorkerFailureStopsEveryoneAndPropagatesItsStatus) {
  RunResult r = RunOnceUp(RunArgs(3, 1, {"hang", "await:exit:3", "hang"}),
                          {"hang-0.pid", "hang-2.pid"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Contains(r.err, "tessera: worker 1 (pid ")) << r.err;
  EXPECT_TRUE(Contains(r.err, ") exited with status 3; stopping the job")) << r.err;
  // The hanging workers were stopped by SIGTERM, well before any grace period.
  EXPECT_LT(Clock::now() - go_, seconds(2)) << r.err;
  ExpectDead("hang-0.pid");
  ExpectDead("hang-2.pid");
  EXPECT_FALSE(Contains(r.err, "did not stop within")) << r.err;
}

TEST_F(TesseraCliTest, CrashIsReportedWithItsSignal) {
  RunResult r = RunOnceUp(RunArgs(2, 1, {"await:crash", "hang"}), {"hang-1.pid"});
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.err;
  EXPECT_TRUE(Contains(r.err, "tessera: worker 0 (pid ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "was killed by signal 11")) << r.err;
  ExpectDead("hang-1.pid");
}

TEST_F(TesseraCliTest, ProcessesIgnoringSigtermAreKilledAfterTheGracePeriod) {
  RunResult r = RunOnceUp(RunArgs(2, 1, {"stubborn", "await:exit:4"}, {"--grace-period", "0.5"}),
                          {"hang-0.pid"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_TRUE(Contains(r.err, "worker 0 (pid ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "did not stop within 500 ms of SIGTERM; killing it")) << r.err;
  EXPECT_GE(Clock::now() - go_, milliseconds(500));
  EXPECT_LT(Clock::now() - go_, seconds(4));
  ExpectDead("hang-0.pid", seconds(5));
}

TEST_F(TesseraCliTest, ServerFailureStopsTheWorkers) {
  RunResult r = Run(RunArgs(2, 2, {"hang"}), {{"FAKE_SERVER_EXIT", "6"}});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_TRUE(Contains(r.err, "exited with status 6; stopping the job")) << r.err;
  EXPECT_TRUE(Contains(r.err, "tessera: server ")) << r.err;
  EXPECT_LT(r.elapsed, seconds(5));
}

// The fake coordinator runs but never answers heartbeats: a hung coordinator, to the launcher.
TEST_F(TesseraCliTest, SilentCoordinatorIsNamedAndStopsTheJob) {
  RunResult r = Run(RunArgs(2, 1, {"hang"}, {"--heartbeat-timeout", "1"}));
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_TRUE(Contains(r.err, "tessera: the coordinator (pid ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "stopped answering")) << r.err;
  // The fake coordinator publishes an endpoint nothing listens on: the report says so.
  EXPECT_TRUE(Contains(r.err, "no connection to it at tcp://127.0.0.1:5555")) << r.err;
  EXPECT_LT(r.elapsed, seconds(5));
  ExpectDead("hang-0.pid");
  ExpectDead("hang-1.pid");
}

TEST_F(TesseraCliTest, SigintToTheLauncherStopsEverything) {
  pid_t pid = Start(RunArgs(2, 1, {"hang"}));
  ASSERT_TRUE(WaitForFiles({"hang-0.pid", "hang-1.pid"}, seconds(10)));
  const auto interrupted = Clock::now();
  kill(pid, SIGINT);
  RunResult r = Wait(pid);
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.err;
  EXPECT_TRUE(Contains(r.err, "received SIGINT; stopping the job")) << r.err;
  EXPECT_LT(Clock::now() - interrupted, seconds(3));
  ExpectDead("hang-0.pid");
  ExpectDead("hang-1.pid");
}

TEST_F(TesseraCliTest, SecondSigintSkipsTheGracePeriod) {
  pid_t pid = Start(RunArgs(1, 1, {"stubborn"}, {"--grace-period", "20"}));
  ASSERT_TRUE(WaitForFiles({"hang-0.pid"}, seconds(10)));
  kill(pid, SIGINT);
  // The first one is being handled once the launcher says so; then press Ctrl-C again.
  const auto deadline = Clock::now() + seconds(10);
  while (!Contains(Slurp("stderr." + std::to_string(runs_)), "received SIGINT; stopping") &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  const auto second = Clock::now();
  kill(pid, SIGINT);
  RunResult r = Wait(pid);
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.err;
  EXPECT_TRUE(Contains(r.err, "received SIGINT again; killing the job")) << r.err;
  EXPECT_LT(Clock::now() - second, seconds(5));  // not the 20 s grace period
  ExpectDead("hang-0.pid");
}

TEST_F(TesseraCliTest, SigtermToTheLauncherStopsEverything) {
  pid_t pid = Start(RunArgs(1, 1, {"hang"}));
  ASSERT_TRUE(WaitForFiles({"hang-0.pid"}, seconds(10)));
  kill(pid, SIGTERM);
  RunResult r = Wait(pid);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  ExpectDead("hang-0.pid");
}

TEST_F(TesseraCliTest, KillingTheLauncherTakesTheJobWithIt) {
  pid_t pid = Start(RunArgs(2, 1, {"hang"}));
  ASSERT_TRUE(WaitForFiles({"hang-0.pid", "hang-1.pid", "server-0.env"}, seconds(10)));
  kill(pid, SIGKILL);  // no chance to stop anything: the children's parent-death signal does it
  Wait(pid);
  for (const char* f : {"hang-0.pid", "hang-1.pid", "server-0.pid", "coordinator-0.pid"}) {
    ExpectDead(f, seconds(5));
    kill(-std::stoi(Slurp(f)), SIGKILL);  // the fakes' own `sleep`s, not part of the contract
  }
}

// --- Bad input -------------------------------------------------------------------------------

TEST_F(TesseraCliTest, HelpListsTheOptions) {
  RunResult r = Run({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"--workers", "--servers", "--log-level", "--bind", "--server-bin",
                           "--env", "--hostfile", "--ssh", "--from-env", "--coordinator",
                           "--startup-timeout", "--grace-period", "--heartbeat-timeout"}) {
    EXPECT_TRUE(Contains(r.out, flag)) << flag << "\n" << r.out;
  }
}

TEST_F(TesseraCliTest, HeartbeatTimeoutMustBeZeroOrAPlausibleDuration) {
  for (const char* bad : {"-1", "0.01", "100000", "soon"}) {
    RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--heartbeat-timeout", bad}));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_TRUE(Contains(r.err, "--heartbeat-timeout")) << bad << ": " << r.err;
    // Nothing was started.
    EXPECT_NE(access((dir_ + "/coordinator-0.args").c_str(), F_OK), 0) << bad;
  }
}

TEST_F(TesseraCliTest, UnknownFlag) {
  RunResult r = Run({"run", "-w", "1", "--frobnicate", "--", kFakeWorker});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "tessera: error:")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--frobnicate")) << r.err;
}

TEST_F(TesseraCliTest, AdvertiseAndNoPrefixAreCheckedBeforeAnythingStarts) {
  RunResult specific = Run(RunArgs(1, 1, {}, {"--bind", "127.0.0.1", "--advertise", "10.0.0.1"}));
  EXPECT_EQ(specific.exit_code, 2);
  EXPECT_TRUE(Contains(specific.err, "--advertise applies with a wildcard --bind")) << specific.err;
  RunResult wildcard = Run(RunArgs(1, 1, {}, {"--bind", "0.0.0.0", "--advertise", "0.0.0.0"}));
  EXPECT_EQ(wildcard.exit_code, 2);
  EXPECT_TRUE(Contains(wildcard.err, "not a wildcard")) << wildcard.err;
  RunResult no_prefix = Run(RunArgs(1, 1, {}, {"--no-prefix"}));
  EXPECT_EQ(no_prefix.exit_code, 2);
  EXPECT_TRUE(Contains(no_prefix.err, "--no-prefix only applies with --from-env")) << no_prefix.err;
  EXPECT_NE(access((dir_ + "/coordinator-0.args").c_str(), F_OK), 0);
}

// With a wildcard --bind, every local process is told the address to advertise.
TEST_F(TesseraCliTest, WildcardBindPassesTheAdvertisedAddress) {
  RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--bind", "0.0.0.0", "--advertise", "127.0.0.1"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* file : {"coordinator-0.env", "server-0.env", "worker-0.env"}) {
    EXPECT_EQ(EnvFile(file)["TESSERA_ADVERTISE_HOST"], "127.0.0.1") << file;
    EXPECT_EQ(EnvFile(file)["TESSERA_BIND_HOST"], "0.0.0.0") << file;
  }
}

TEST_F(TesseraCliTest, MissingDoubleDash) {
  RunResult r = Run({"run", "-w", "1", "--server-bin", kFakeServer, kFakeWorker});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "missing `--` before the program")) << r.err;
}

TEST_F(TesseraCliTest, NothingAfterDoubleDash) {
  RunResult r = Run({"run", "-w", "1", "--server-bin", kFakeServer, "--"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "no program after `--`")) << r.err;
}

TEST_F(TesseraCliTest, WorkerAndServerCountsMustBePositive) {
  RunResult w = Run(RunArgs(0, 1, {"print:1"}));
  EXPECT_EQ(w.exit_code, 2);
  EXPECT_TRUE(Contains(w.err, "number of workers (-w) must be at least 1, got 0")) << w.err;
  RunResult s = Run(RunArgs(1, 0, {"print:1"}));
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_TRUE(Contains(s.err, "number of servers (-s) must be at least 1, got 0")) << s.err;
  RunResult missing_w = Run({"run", "--server-bin", kFakeServer, "--", kFakeWorker});
  EXPECT_EQ(missing_w.exit_code, 2);
  EXPECT_TRUE(Contains(missing_w.err, "--workers")) << missing_w.err;
}

TEST_F(TesseraCliTest, ProgramNotFoundOrNotExecutable) {
  RunResult missing = Run({"run", "-w", "1", "--server-bin", kFakeServer, "--", "./no-such-prog"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(Contains(missing.err, "cannot run the program: ./no-such-prog: No such file"))
      << missing.err;
  RunResult not_in_path =
      Run({"run", "-w", "1", "--server-bin", kFakeServer, "--", "no-such-prog-in-path"});
  EXPECT_EQ(not_in_path.exit_code, 2);
  EXPECT_TRUE(Contains(not_in_path.err, "no-such-prog-in-path: not found in PATH"))
      << not_in_path.err;
  std::ofstream(dir_ + "/data.txt") << "x\n";
  RunResult not_exec = Run({"run", "-w", "1", "--server-bin", kFakeServer, "--", "./data.txt"});
  EXPECT_EQ(not_exec.exit_code, 2);
  EXPECT_TRUE(Contains(not_exec.err, "./data.txt: not executable")) << not_exec.err;
  // Nothing was started.
  EXPECT_NE(access((dir_ + "/coordinator-0.args").c_str(), F_OK), 0);
}

TEST_F(TesseraCliTest, ServerBinaryNotFound) {
  RunResult r = Run({"run", "-w", "1", "--server-bin", dir_ + "/nope", "--", kFakeWorker});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "cannot run tessera-server")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--server-bin")) << r.err;
}

TEST_F(TesseraCliTest, HostfileUnreadableOrMalformed) {
  RunResult missing = Run(RunArgs(1, 1, {"print:1"}, {"--hostfile", dir_ + "/no-hosts"}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(Contains(missing.err, "cannot read hostfile " + dir_ + "/no-hosts")) << missing.err;

  std::ofstream(dir_ + "/hosts") << "# cluster\nlocalhost slots=2\nlocalhost slots=lots\n";
  RunResult bad = Run(RunArgs(1, 1, {"print:1"}, {"--hostfile", dir_ + "/hosts"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(Contains(bad.err, dir_ + "/hosts:3: slots must be a positive integer, got 'lots'"))
      << bad.err;
}

TEST_F(TesseraCliTest, RemoteHostsNeedANonLoopbackBind) {
  std::ofstream(dir_ + "/hosts") << "localhost\n10.255.0.1\n";
  RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--hostfile", dir_ + "/hosts"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "host '10.255.0.1' is not this machine")) << r.err;
  EXPECT_TRUE(Contains(r.err, "pass --bind ADDR")) << r.err;
}

TEST_F(TesseraCliTest, HostfileHostThatDoesNotResolve) {
  std::ofstream(dir_ + "/hosts") << "localhost\nno-such-host.invalid slots=2\n";
  RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--hostfile", dir_ + "/hosts"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "cannot resolve host 'no-such-host.invalid'")) << r.err;
}

TEST_F(TesseraCliTest, CoordinatorThatNeverWritesItsEndpoint) {
  RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--startup-timeout", "0.5"}),
                    {{"FAKE_COORDINATOR", "never"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "did not write its endpoint to ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "within 500 ms")) << r.err;
  EXPECT_LT(r.elapsed, seconds(4));
  EXPECT_NE(access((dir_ + "/worker-0.args").c_str(), F_OK), 0) << "a worker was started";
}

TEST_F(TesseraCliTest, CoordinatorThatDiesFirst) {
  RunResult r = Run(RunArgs(1, 1, {"print:1"}), {{"FAKE_COORDINATOR", "die"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "coordinator (pid ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "exited with status 7 before writing its endpoint")) << r.err;
  EXPECT_TRUE(Contains(r.err, "[coordinator] coordinator failing on purpose")) << r.err;
}

// --- Hostfile over "ssh" ---------------------------------------------------------------------

TEST_F(TesseraCliTest, HostfileRunsProcessesThroughTheSshCommand) {
  std::ofstream(dir_ + "/hosts") << "# two hosts that are both this machine\n"
                                    "localhost slots=2\n"
                                    "127.0.0.1   # one slot\n";
  const std::string ssh_log = dir_ + "/ssh.log";
  RunResult r = Run(RunArgs(3, 2, {"print:1"},
                            {"--hostfile", dir_ + "/hosts", "--ssh",
                             kFakeSsh + " -o BatchMode=yes", "-x", "FAKE_LOG_DIR", "-x",
                             "EXTRA=a b"}),
                    {{"FAKE_SSH_LOG", ssh_log}, {"FAKE_ENDPOINT", "tcp://127.0.0.1:7777"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Output comes back prefixed through the ssh sessions.
  for (int w = 0; w < 3; ++w) {
    std::string line = "[worker " + std::to_string(w) + "] line 1 of worker " +
                       std::to_string(w) + "\n";
    EXPECT_TRUE(Contains(r.out, line)) << r.out;
  }

  // One ssh session per server and worker (the coordinator runs here), on the planned hosts.
  std::map<std::string, std::string> host_of;  // "worker 2" -> host
  std::istringstream log(Slurp("ssh.log"));
  int sessions = 0;
  for (std::string line; std::getline(log, line);) {
    ++sessions;
    const std::string host = line.substr(0, line.find('\t'));
    const std::string command = line.substr(line.find('\t') + 1);
    EXPECT_EQ(command.rfind("IFS= read -r TESSERA_JOB_SECRET; export TESSERA_JOB_SECRET; cd " +
                                dir_ + " || exit 127; exec 3<&0; setsid env ",
                            0),
              0u)
        << command;
    EXPECT_TRUE(Contains(command, "FAKE_LOG_DIR=" + dir_)) << command;
    EXPECT_TRUE(Contains(command, "'EXTRA=a b'")) << command;
    // Names are resolved (ZeroMQ binds to addresses): localhost binds to 127.0.0.1.
    EXPECT_TRUE(Contains(command, "TESSERA_BIND_HOST=127.0.0.1 ")) << command;
    EXPECT_TRUE(Contains(command, "TESSERA_COORDINATOR=tcp://127.0.0.1:7777 ")) << command;
    EXPECT_FALSE(Contains(command, "TESSERA_JOB_SECRET=")) << "secret on a command line";
    const std::string role = Contains(command, "TESSERA_ROLE=server") ? "server" : "worker";
    size_t at = command.find("TESSERA_RANK=") + 13;
    host_of[role + " " + command.substr(at, command.find(' ', at) - at)] = host;
    if (role == "server") {
      EXPECT_TRUE(Contains(command, kFakeServer + " --role server --rank ")) << command;
    } else {
      EXPECT_TRUE(Contains(command, kFakeWorker + " print:1")) << command;
    }
  }
  EXPECT_EQ(sessions, 5);
  EXPECT_EQ(host_of["server 0"], "localhost");
  EXPECT_EQ(host_of["server 1"], "127.0.0.1");
  EXPECT_EQ(host_of["worker 0"], "localhost");
  EXPECT_EQ(host_of["worker 1"], "localhost");
  EXPECT_EQ(host_of["worker 2"], "127.0.0.1");

  // What the remote processes saw (fake_ssh runs them with a clean environment).
  const std::string secret = EnvFile("coordinator-0.env")["TESSERA_JOB_SECRET"];
  ASSERT_EQ(secret.size(), 32u);
  for (const char* f : {"server-0.env", "server-1.env", "worker-0.env", "worker-2.env"}) {
    auto env = EnvFile(f);
    EXPECT_EQ(env["TESSERA_JOB_SECRET"], secret) << f;
    EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://127.0.0.1:7777") << f;
    EXPECT_EQ(env["TESSERA_NUM_WORKERS"], "3") << f;
  }
  EXPECT_EQ(EnvFile("worker-2.env")["TESSERA_BIND_HOST"], "127.0.0.1");
}

TEST_F(TesseraCliTest, RemoteFailureStopsTheJob) {
  std::ofstream(dir_ + "/hosts") << "localhost\n127.0.0.1\n";
  RunResult r = RunOnceUp(RunArgs(2, 1, {"hang", "await:exit:9"},
                                  {"--hostfile", dir_ + "/hosts", "--ssh", kFakeSsh, "-x",
                                   "FAKE_LOG_DIR"}),
                          {"hang-0.pid"});
  EXPECT_EQ(r.exit_code, 9) << r.err;
  EXPECT_TRUE(Contains(r.err, "worker 1 (pid ")) << r.err;
  EXPECT_LT(Clock::now() - go_, seconds(4));
  ExpectDead("hang-0.pid", seconds(5));
}

TEST_F(TesseraCliTest, RemoteProcessesStopWhenTheirSshSessionEnds) {
  // FAKE_SSH_DETACH: the "remote" command runs in its own session, out of reach of the signals
  // the launcher sends to the ssh process, as on a real remote host. Only the end of its stdin
  // can stop it.
  std::ofstream(dir_ + "/hosts") << "localhost\n127.0.0.1\n";
  RunResult r = RunOnceUp(RunArgs(2, 1, {"hang", "await:exit:9"},
                                  {"--hostfile", dir_ + "/hosts", "--ssh", kFakeSsh, "-x",
                                   "FAKE_LOG_DIR", "--grace-period", "0.5"}),
                          {"hang-0.pid"}, {{"FAKE_SSH_DETACH", "1"}});
  EXPECT_EQ(r.exit_code, 9) << r.err;
  ExpectDead("hang-0.pid", seconds(5));
}

TEST_F(TesseraCliTest, RemoteProcessesIgnoringSigtermAreKilledByTheirWatchdog) {
  std::ofstream(dir_ + "/hosts") << "localhost\n127.0.0.1\n";
  RunResult r = RunOnceUp(RunArgs(2, 1, {"stubborn", "await:exit:9"},
                                  {"--hostfile", dir_ + "/hosts", "--ssh", kFakeSsh, "-x",
                                   "FAKE_LOG_DIR", "--grace-period", "0.5"}),
                          {"hang-0.pid"}, {{"FAKE_SSH_DETACH", "1"}});
  EXPECT_EQ(r.exit_code, 9) << r.err;
  // SIGTERM is ignored; SIGKILL follows after the grace period rounded up to 1 s.
  ExpectDead("hang-0.pid", seconds(6));
}

// --- Under srun / mpirun ---------------------------------------------------------------------

TEST_F(TesseraCliTest, FromEnvSlurmRanksBecomeCoordinatorServersAndWorkers) {
  const std::map<std::string, std::string> slurm = {{"SLURM_NTASKS", "4"},
                                                    {"SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"},
                                                    {"SLURM_JOB_ID", "4242"},
                                                    {"TESSERA_JOB_SECRET", "shared-9f3c4b1a7e5d"},
                                                    {"FAKE_EXIT_AFTER_START", "1"},
                                                    {"FAKE_NO_WAIT", "1"}};
  auto with_rank = [&](int rank) {
    auto env = slurm;
    env["SLURM_PROCID"] = std::to_string(rank);
    return env;
  };
  RunResult coordinator = Run(RunArgs(2, 1, {"print:1"}, {"--from-env"}), with_rank(0));
  EXPECT_EQ(coordinator.exit_code, 0) << coordinator.err;
  // The port is the job's (derived from SLURM_JOB_ID), the same in every task.
  const std::string args = Slurp("coordinator-0.args");
  const std::string listen = "--listen tcp://127.0.0.1:";
  ASSERT_TRUE(Contains(args, listen)) << args;
  const std::string port = args.substr(args.find(listen) + listen.size(), 5);
  EXPECT_EQ(args, "--role coordinator --listen tcp://127.0.0.1:" + port +
                      " --num-servers 1 --num-workers 2\n");
  EXPECT_EQ(EnvFile("coordinator-0.env")["TESSERA_JOB_SECRET"], "shared-9f3c4b1a7e5d");

  RunResult server = Run(RunArgs(2, 1, {"print:1"}, {"--from-env"}), with_rank(1));
  EXPECT_EQ(server.exit_code, 0) << server.err;
  EXPECT_EQ(Slurp("server-0.args"),
            "--role server --rank 0 --coordinator tcp://127.0.0.1:" + port + "\n");

  RunResult worker = Run(RunArgs(2, 1, {"print:1", "exit:5"}, {"--from-env"}), with_rank(3));
  // The task relays the worker: its exit code, and its output with its label.
  EXPECT_EQ(worker.exit_code, 5) << worker.err;
  EXPECT_EQ(worker.out, "[worker 1] worker 1 exiting with 5\n");
  // --no-prefix: the task becomes the worker itself (exec): the same code, unprefixed output.
  RunResult exec = Run(RunArgs(2, 1, {"print:1", "exit:5"}, {"--from-env", "--no-prefix"}),
                       with_rank(3));
  EXPECT_EQ(exec.exit_code, 5) << exec.err;
  EXPECT_EQ(exec.out, "worker 1 exiting with 5\n");
  auto env = EnvFile("worker-1.env");
  EXPECT_EQ(env["TESSERA_ROLE"], "worker");
  EXPECT_EQ(env["TESSERA_RANK"], "1");
  EXPECT_EQ(env["TESSERA_NUM_SERVERS"], "1");
  EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://127.0.0.1:" + port);
  EXPECT_EQ(env["TESSERA_BIND_HOST"], "127.0.0.1");
  EXPECT_EQ(env["TESSERA_JOB_SECRET"], "shared-9f3c4b1a7e5d");
}

TEST_F(TesseraCliTest, FromEnvOpenMpiWithExplicitCoordinator) {
  RunResult r = Run(
      RunArgs(
          1, 1, {"print:1"},
          {"--from-env", "--insecure", "--coordinator", "10.9.8.7:6001", "--bind", "127.0.0.1"}),
      {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"FAKE_NO_WAIT", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[worker 0] line 1 of worker 0\n");
  EXPECT_TRUE(Contains(r.err, "runs unauthenticated")) << r.err;
  EXPECT_EQ(EnvFile("worker-0.env")["TESSERA_COORDINATOR"], "tcp://10.9.8.7:6001");
  EXPECT_EQ(EnvFile("worker-0.env")["TESSERA_BIND_HOST"], "127.0.0.1");
}

TEST_F(TesseraCliTest, FromEnvErrors) {
  RunResult none = Run(RunArgs(1, 1, {"print:1"}, {"--from-env"}));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(Contains(none.err, "neither SLURM_PROCID/SLURM_NTASKS")) << none.err;

  RunResult count = Run(RunArgs(2, 1, {"print:1"}, {"--from-env"}),
                        {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"},
                         {"SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"}});
  EXPECT_EQ(count.exit_code, 2);
  EXPECT_TRUE(Contains(count.err, "the job has 3 tasks (slurm) but -s 1 -w 2 needs")) << count.err;

  RunResult where = Run(RunArgs(1, 1, {"print:1"}, {"--from-env"}),
                        {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  EXPECT_EQ(where.exit_code, 2);
  EXPECT_TRUE(Contains(where.err, "pass --coordinator")) << where.err;

  // No job id to derive the port from: no fixed default that a second job would collide on.
  RunResult no_id =
      Run(RunArgs(1, 1, {"print:1"}, {"--from-env"}), {{"SLURM_PROCID", "0"},
                                                       {"SLURM_NTASKS", "3"},
                                                       {"SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"},
                                                       {"TESSERA_JOB_SECRET", "shared"}});
  EXPECT_EQ(no_id.exit_code, 2);
  EXPECT_TRUE(Contains(no_id.err,
                       "no job id to derive this job's coordinator port from "
                       "(SLURM_JOB_ID is not set); pass --coordinator HOST:PORT"))
      << no_id.err;
  EXPECT_EQ(Slurp("coordinator-0.args"), "") << "nothing may start";
}

// A task without the job secret refuses to start (nothing is exec'd) unless told --insecure;
// an empty secret counts as none.
TEST_F(TesseraCliTest, FromEnvWithoutASecretRefusesToStart) {
  const std::map<std::string, std::string> task = {{"OMPI_COMM_WORLD_RANK", "2"},
                                                   {"OMPI_COMM_WORLD_SIZE", "3"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                                                   {"OMPI_MCA_ess_base_jobid", "3735552001"},
                                                   {"FAKE_NO_WAIT", "1"}};
  for (const std::string& secret : {std::string("unset"), std::string("")}) {
    auto env = task;
    if (secret != "unset") env["TESSERA_JOB_SECRET"] = secret;
    RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--from-env"}), env);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(Contains(r.err, "TESSERA_JOB_SECRET is not set")) << r.err;
    EXPECT_TRUE(Contains(r.err, "--insecure")) << r.err;
  }
  RunResult local = Run(RunArgs(1, 1, {"print:1"}, {"--insecure"}));
  EXPECT_EQ(local.exit_code, 2);
  EXPECT_TRUE(Contains(local.err, "--insecure only applies with --from-env")) << local.err;
}

// A short or repetitive secret is refused like none (nothing is exec'd), naming what is wrong;
// --insecure runs with it, warning. A secret as tessera run makes one passes.
TEST_F(TesseraCliTest, FromEnvWithAWeakSecretRefusesToStart) {
  const std::map<std::string, std::string> task = {{"OMPI_COMM_WORLD_RANK", "2"},
                                                   {"OMPI_COMM_WORLD_SIZE", "3"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                                                   {"OMPI_MCA_ess_base_jobid", "3735552001"},
                                                   {"FAKE_NO_WAIT", "1"}};
  const std::vector<std::pair<std::string, std::string>> weak = {
      {"s3cret", "has 6 characters, fewer than the 16"},
      {"abababababababababab", "uses only 2 different characters, fewer than the 8"}};
  for (const auto& [secret, why] : weak) {
    auto env = task;
    env["TESSERA_JOB_SECRET"] = secret;
    RunResult r = Run(RunArgs(1, 1, {"print:1"}, {"--from-env"}), env);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(Contains(r.err, "TESSERA_JOB_SECRET is too weak: the job secret " + why)) << r.err;
    EXPECT_TRUE(Contains(r.err, "head -c16 /dev/urandom")) << r.err;
    EXPECT_FALSE(Contains(r.err, secret)) << "the secret itself must not be printed";
    EXPECT_EQ(Slurp("worker-0.env"), "") << "nothing may start";

    RunResult anyway = Run(RunArgs(1, 1, {"print:1"}, {"--from-env", "--insecure"}), env);
    EXPECT_EQ(anyway.exit_code, 0) << anyway.err;
    EXPECT_EQ(anyway.out, "[worker 0] line 1 of worker 0\n");
    EXPECT_TRUE(Contains(anyway.err, "--insecure: TESSERA_JOB_SECRET is too weak")) << anyway.err;
    EXPECT_EQ(EnvFile("worker-0.env")["TESSERA_JOB_SECRET"], secret);
    std::remove((dir_ + "/worker-0.env").c_str());
  }
  auto env = task;
  env["TESSERA_JOB_SECRET"] = "0f3a9c27d41e8b5609ce72a1d3b4f580";
  RunResult good = Run(RunArgs(1, 1, {"print:1"}, {"--from-env"}), env);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_FALSE(Contains(good.err, "too weak")) << good.err;
}

}  // namespace
}  // namespace tessera::launcher::testing
