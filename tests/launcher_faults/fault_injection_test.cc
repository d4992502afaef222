// Fault injection on real jobs: `tessera run -w 2` of mf and lda (small generated data sets) with
// 1 or 2 servers, and the same under --from-env as srun would start it. Each case sends SIGKILL or
// SIGSTOP to one process (the coordinator, a server or a worker) at a random point -- while it
// joins and loads, or after a random number of epochs -- and checks who is named, how soon, the
// exit code, and that no process and no scratch directory is left behind.
//
// The random points come from a seed printed with every failure; TESSERA_FAULT_SEED=N replays
// one. scripts/fault_soak.sh runs these cases in a loop with fresh seeds.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <regex>
#include <set>

#include "tests/launcher/tessera_harness.h"

namespace tessera::launcher::testing {
namespace {

// Short, to keep the suite fast; the detection bounds below scale with it.
constexpr int kHeartbeatSeconds = 3;
constexpr auto kHeartbeat = seconds(kHeartbeatSeconds);

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

uint64_t SeedFromEnvOrRandom() {
  if (const char* s = std::getenv("TESSERA_FAULT_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The largest "for X s" in `text` (the silence a report measured), or -1.
double ReportedSilence(const std::string& text) {
  static const std::regex kFor("for ([0-9.]+) s");
  double worst = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kFor); it != std::sregex_iterator();
       ++it) {
    worst = std::max(worst, std::stod((*it)[1]));
  }
  return worst;
}

// Whether a worker's `text` reports its peer-mesh connection with worker `peer` lost
// (peer_mesh.cc), in either direction.
bool LostMeshConnectionWith(const std::string& text, int peer) {
  const std::string w = "worker " + std::to_string(peer);
  return Contains(text, "peer mesh: the connection from " + w + " to this worker's inbox") ||
         Contains(text, "peer mesh: the connection from this worker to " + w + "'s inbox");
}

enum class App { kMf, kLda };

class FaultInjectionTest : public TesseraHarness {
 protected:
  FaultInjectionTest() : TesseraHarness(TESSERA_LAUNCHER_BINARY) {}

  void SetUp() override {
    TesseraHarness::SetUp();
    seed_ = SeedFromEnvOrRandom();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
    WriteData();
  }

  // Ratings of 400 users x 300 items and a corpus of 300 documents over 500 words: an epoch
  // takes milliseconds, so a job runs as long as its (huge) epoch count lets it: until a fault.
  void WriteData() {
    std::mt19937_64 gen(7);
    std::ofstream ratings(dir_ + "/ratings.txt");
    std::set<std::pair<int, int>> seen;
    while (seen.size() < 20000) {
      const int u = static_cast<int>(gen() % 400) + 1, i = static_cast<int>(gen() % 300) + 1;
      if (seen.insert({u, i}).second) ratings << u << '\t' << i << '\t' << gen() % 5 + 1 << '\n';
    }
    std::ofstream docword(dir_ + "/docword.txt");
    std::vector<std::pair<int, int>> entries;
    for (int d = 1; d <= 300; ++d) {
      std::set<int> words;
      while (words.size() < 20) words.insert(static_cast<int>(gen() % 500) + 1);
      for (int w : words) entries.emplace_back(d, w);
    }
    docword << 300 << '\n' << 500 << '\n' << entries.size() << '\n';
    for (auto [d, w] : entries) docword << d << ' ' << w << ' ' << gen() % 3 + 1 << '\n';
  }

  std::vector<std::string> Program(App app) const {
    if (app == App::kMf) {
      return {
          TESSERA_MF_BINARY, "--train", dir_ + "/ratings.txt", "--epochs", "100000000", "-k", "8"};
    }
    return {TESSERA_LDA_BINARY,
            "--docword",
            dir_ + "/docword.txt",
            "--iterations",
            "100000000",
            "--topics",
            "8",
            "--eval-every",
            "0"};
  }
  static std::string Progress(App app) { return app == App::kMf ? "epoch " : "iter "; }

  // Waits (bounded) until `ready` holds for the current run's output.
  bool WaitForOutput(
      const std::function<bool(const std::string& out, const std::string& err)>& ready,
      Clock::duration timeout = seconds(30)) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (ready(Slurp("stdout." + std::to_string(runs_)),
                Slurp("stderr." + std::to_string(runs_)))) {
        return true;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  // Every "started LABEL (pid N)" the launcher logged (at debug level).
  static std::map<std::string, pid_t> StartedPids(const std::string& err) {
    static const std::regex kStarted("started ([a-z]+(?: [0-9]+)?) \\(pid ([0-9]+)\\)");
    std::map<std::string, pid_t> pids;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), kStarted);
         it != std::sregex_iterator(); ++it) {
      pids[(*it)[1]] = static_cast<pid_t>(std::stoi((*it)[2]));
    }
    return pids;
  }

  void ExpectNoScratchDirectory() {
    DIR* d = opendir(dir_.c_str());
    ASSERT_NE(d, nullptr);
    while (dirent* e = readdir(d)) {
      EXPECT_NE(std::string(e->d_name).rfind("tessera-job-", 0), 0u)
          << "left behind: " << dir_ << "/" << e->d_name;
    }
    closedir(d);
  }

  // Runs a job of `app` with `servers` servers, hits `target` ("coordinator", "server 1",
  // "worker 0") with `sig` at a random point, and checks the outcome.
  void InjectUnderLauncher(App app, int servers, const std::string& target, int sig) {
    SCOPED_TRACE("seed " + std::to_string(seed_) + " (replay with TESSERA_FAULT_SEED)");
    std::vector<std::string> args = {"run",
                                     "-w",
                                     "2",
                                     "-s",
                                     std::to_string(servers),
                                     "--log-level",
                                     "debug",
                                     "--heartbeat-timeout",
                                     std::to_string(kHeartbeatSeconds),
                                     "--server-bin",
                                     TESSERA_SERVER_BINARY,
                                     "--"};
    for (const std::string& a : Program(app)) args.push_back(a);
    const pid_t launcher = Start(args);

    // The random point: 0 = as soon as the coordinator watches the target (it is joining or
    // loading), k > 0 = after worker 0 reported k epochs/iterations.
    const int point = static_cast<int>(rng_() % 4);
    SCOPED_TRACE("point " + std::to_string(point));
    const std::string watched =
        target == "coordinator" ? "coordinator listens on" : "watching " + target + " (pid";
    const std::string progress = "[worker 0] " + Progress(app);
    ASSERT_TRUE(WaitForOutput([&](const std::string& out, const std::string& err) {
      return Contains(err + out, watched) && Count(out, progress) >= static_cast<size_t>(point);
    })) << Slurp("stderr." + std::to_string(runs_));
    const std::map<std::string, pid_t> pids = StartedPids(Slurp("stderr." + std::to_string(runs_)));
    ASSERT_TRUE(pids.contains(target)) << target;
    const pid_t victim = pids.at(target);

    const auto hit = Clock::now();
    ASSERT_EQ(kill(victim, sig), 0);
    RunResult r = Wait(launcher, seconds(30));
    const auto took = Clock::now() - hit;
    const std::string named =
        "tessera: " + (target == "coordinator" ? std::string("the coordinator") : target) +
        " (pid " + std::to_string(victim);
    if (sig == SIGKILL) {
      EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
      EXPECT_TRUE(Contains(r.err, target + " (pid " + std::to_string(victim) +
                                      ") was killed by signal 9 (Killed); stopping the job"))
          << r.err;
      EXPECT_LT(took, seconds(2));
    } else {
      EXPECT_EQ(r.exit_code, 124) << r.err;
      EXPECT_TRUE(Contains(r.err, named)) << named << "\n" << r.err;
      EXPECT_TRUE(Contains(r.err, "stopped answering")) << r.err;
      // Reported within the configured timeout, and the job gone shortly after.
      const double silence = ReportedSilence(LinesOf(r.err, "tessera: "));
      EXPECT_GT(silence, 0) << r.err;
      EXPECT_LT(silence, kHeartbeatSeconds) << r.err;
      EXPECT_LT(took, kHeartbeat + seconds(2));
    }
    for (const auto& [label, pid] : pids) {
      EXPECT_FALSE(IsAlive(pid)) << label << " (pid " << pid << ") outlived the job";
      if (IsAlive(pid)) kill(pid, SIGKILL);
    }
    ExpectNoScratchDirectory();
  }

  // srun -n 4 tessera run -w 2 -s 1 --from-env: hits the task of `hit_rank` with `sig` after a
  // random number of epochs, and checks that every other task exits nonzero within the timeout.
  // --no-prefix: each task is its process (exec), so that the signal hits the process itself (a
  // relaying task cannot pass SIGSTOP on).
  // With `relay`, each task runs its process as a child and relays its lines (the default): a
  // killed task takes its process with it, and no process outlives the job.
  void InjectUnderFromEnv(int hit_rank, int sig, bool relay = false) {
    SCOPED_TRACE("seed " + std::to_string(seed_) + " (replay with TESSERA_FAULT_SEED)");
    const int port = FreePort();
    ASSERT_GT(port, 0);
    std::map<int, pid_t> tasks;
    std::map<int, int> run_of;
    for (int rank : {0, 1, 2, 3}) {
      std::vector<std::string> args = {"run",
                                       "-w",
                                       "2",
                                       "-s",
                                       "1",
                                       "--from-env",
                                       "--coordinator",
                                       "127.0.0.1:" + std::to_string(port),
                                       "--heartbeat-timeout",
                                       std::to_string(kHeartbeatSeconds),
                                       "--server-bin",
                                       TESSERA_SERVER_BINARY,
                                       "--"};
      for (const std::string& a : Program(App::kMf)) args.push_back(a);
      if (!relay) args.insert(args.begin() + 6, "--no-prefix");
      tasks[rank] = Start(args, {{"SLURM_PROCID", std::to_string(rank)},
                                 {"SLURM_NTASKS", "4"},
                                 {"TESSERA_JOB_SECRET", "fault-secret-5d8e2a"}});
      run_of[rank] = runs_;
    }
    const int point = 1 + static_cast<int>(rng_() % 3);
    SCOPED_TRACE("point " + std::to_string(point));
    const auto deadline = Clock::now() + seconds(30);
    while (Count(Slurp("stdout." + std::to_string(run_of[2])), "epoch ") <
               static_cast<size_t>(point) &&
           Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_GE(Count(Slurp("stdout." + std::to_string(run_of[2])), "epoch "),
              static_cast<size_t>(point))
        << Slurp("stderr." + std::to_string(run_of[2]));

    // Every task's processes (with --no-prefix, none: the task is the process).
    std::vector<pid_t> processes;
    for (const auto& [rank, task] : tasks) {
      for (pid_t child : ChildrenOf(task)) processes.push_back(child);
    }
    if (relay) {
      EXPECT_EQ(processes.size(), tasks.size());
    }
    const auto hit = Clock::now();
    ASSERT_EQ(kill(tasks[hit_rank], sig), 0);
    std::map<int, std::string> said;
    for (int rank : {0, 1, 2, 3}) {
      if (rank == hit_rank) continue;
      RunResult r = Wait(tasks[rank], seconds(30));
      const auto took = Clock::now() - hit;
      SCOPED_TRACE("task " + std::to_string(rank));
      // The coordinator fails the job (124); every other process stops because it did (75). A
      // killed worker's connection closes: once the other worker has stopped too (its peer-mesh
      // connection with the killed one lost, 75), every worker is gone and the coordinator fails
      // the job at once (75) rather than after the killed worker's silence.
      if (rank == 0 && sig == SIGKILL && hit_rank >= 2) {
        EXPECT_TRUE(r.exit_code == 124 || r.exit_code == 75) << r.out << r.err;
      } else {
        EXPECT_EQ(r.exit_code, rank == 0 ? 124 : 75) << r.out << r.err;
      }
      EXPECT_LT(took, kHeartbeat + seconds(2));
      said[rank] = r.out + r.err;
    }
    // Each names the cause: the coordinator's report, or losing the coordinator. A worker may
    // instead be first to see its peer-mesh connection with the other worker drop (it names that
    // worker): the hit worker itself, or a worker that had already stopped for the cause (it lost
    // the coordinator, or the coordinator's report reached it first).
    const std::string cause = hit_rank == 0 ? "lost the coordinator" : "stopped answering";
    for (const auto& [rank, text] : said) {
      SCOPED_TRACE("task " + std::to_string(rank));
      if (Contains(text, cause)) continue;
      if (sig == SIGKILL && hit_rank >= 2 && rank < 2 &&
          Contains(text, "exited without leaving the job")) {
        continue;
      }
      const int other = rank == 2 ? 3 : 2;  // the other worker's task
      const bool named_other = rank >= 2 && LostMeshConnectionWith(text, other - 2);
      EXPECT_TRUE(named_other && (other == hit_rank || Contains(said.at(other), cause)))
          << text;
    }
    if (sig == SIGSTOP) {
      // Resumed after the job is over, the stopped process finds no coordinator and exits too.
      kill(tasks[hit_rank], SIGCONT);
      RunResult r = Wait(tasks[hit_rank], seconds(30));
      EXPECT_EQ(r.exit_code, hit_rank == 0 ? 124 : 75) << r.out << r.err;
    } else {
      EXPECT_EQ(Wait(tasks[hit_rank], seconds(5)).exit_code, 128 + SIGKILL);
    }
    for (const pid_t pid : processes) {
      // A killed task's process gets the kernel's parent-death signal.
      const auto until = Clock::now() + seconds(5);
      while (IsAlive(pid) && Clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
      EXPECT_FALSE(IsAlive(pid)) << "pid " << pid << " outlived its task";
      if (IsAlive(pid)) kill(pid, SIGKILL);
    }
  }

  // The processes whose parent is `parent` (from /proc).
  static std::vector<pid_t> ChildrenOf(pid_t parent) {
    std::vector<pid_t> children;
    DIR* d = opendir("/proc");
    if (d == nullptr) return children;
    while (dirent* e = readdir(d)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      // pid (comm) state ppid ...: comm may hold spaces, so parse after its closing parenthesis.
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 1));
      std::string state;
      pid_t ppid = 0;
      rest >> state >> ppid;
      if (ppid == parent) children.push_back(pid);
    }
    closedir(d);
    return children;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

// tessera run, mf, 1 server: every kind of process, both signals.
TEST_F(FaultInjectionTest, MfCoordinatorKilled) {
  InjectUnderLauncher(App::kMf, 1, "coordinator", SIGKILL);
}
TEST_F(FaultInjectionTest, MfCoordinatorStopped) {
  InjectUnderLauncher(App::kMf, 1, "coordinator", SIGSTOP);
}
TEST_F(FaultInjectionTest, MfServerKilled) {
  InjectUnderLauncher(App::kMf, 1, "server 0", SIGKILL);
}
TEST_F(FaultInjectionTest, MfServerStopped) {
  InjectUnderLauncher(App::kMf, 1, "server 0", SIGSTOP);
}
TEST_F(FaultInjectionTest, MfWorker0Killed) {
  InjectUnderLauncher(App::kMf, 1, "worker 0", SIGKILL);
}
TEST_F(FaultInjectionTest, MfWorker0Stopped) {
  InjectUnderLauncher(App::kMf, 1, "worker 0", SIGSTOP);
}
TEST_F(FaultInjectionTest, MfWorker1Killed) {
  InjectUnderLauncher(App::kMf, 1, "worker 1", SIGKILL);
}
TEST_F(FaultInjectionTest, MfWorker1Stopped) {
  InjectUnderLauncher(App::kMf, 1, "worker 1", SIGSTOP);
}

// tessera run, lda, 2 servers.
TEST_F(FaultInjectionTest, LdaCoordinatorStopped) {
  InjectUnderLauncher(App::kLda, 2, "coordinator", SIGSTOP);
}
TEST_F(FaultInjectionTest, LdaServer1Killed) {
  InjectUnderLauncher(App::kLda, 2, "server 1", SIGKILL);
}
TEST_F(FaultInjectionTest, LdaServer1Stopped) {
  InjectUnderLauncher(App::kLda, 2, "server 1", SIGSTOP);
}
TEST_F(FaultInjectionTest, LdaWorker0Killed) {
  InjectUnderLauncher(App::kLda, 2, "worker 0", SIGKILL);
}
TEST_F(FaultInjectionTest, LdaWorker1Stopped) {
  InjectUnderLauncher(App::kLda, 2, "worker 1", SIGSTOP);
}

// lda, 2 servers: a process kind and a signal drawn from the seed, so that the soak covers every
// combination the fixed cases above leave out.
TEST_F(FaultInjectionTest, LdaRandomProcessAndSignal) {
  const std::vector<std::string> targets = {"coordinator", "server 0", "server 1", "worker 0",
                                            "worker 1"};
  const std::string target = targets[rng_() % targets.size()];
  const int sig = rng_() % 2 == 0 ? SIGKILL : SIGSTOP;
  SCOPED_TRACE(target + (sig == SIGKILL ? " killed" : " stopped"));
  InjectUnderLauncher(App::kLda, 2, target, sig);
}

// --from-env (tasks as srun starts them): ranks 0 coordinator, 1 server 0, 2-3 workers 0-1.
TEST_F(FaultInjectionTest, FromEnvCoordinatorKilled) { InjectUnderFromEnv(0, SIGKILL); }
TEST_F(FaultInjectionTest, FromEnvServerStopped) { InjectUnderFromEnv(1, SIGSTOP); }
TEST_F(FaultInjectionTest, FromEnvWorkerKilled) { InjectUnderFromEnv(3, SIGKILL); }
TEST_F(FaultInjectionTest, FromEnvWorkerStopped) { InjectUnderFromEnv(2, SIGSTOP); }
TEST_F(FaultInjectionTest, FromEnvCoordinatorStopped) { InjectUnderFromEnv(0, SIGSTOP); }
// Relaying tasks (no --no-prefix): a killed task takes its worker with it, nothing is left.
TEST_F(FaultInjectionTest, FromEnvRelayingTaskKilledLeavesNoProcess) {
  InjectUnderFromEnv(3, SIGKILL, /*relay=*/true);
}

// Liveness is about answering, not progress: workers whose main thread spins or sleeps for
// twice the heartbeat timeout (a long load, a long loop body) do not fail the job.
TEST_F(FaultInjectionTest, BusyMainThreadsDoNotTripTheTimeout) {
  RunResult r = Run({"run", "-w", "2", "-s", "1", "--heartbeat-timeout", "1", "--server-bin",
                     TESSERA_SERVER_BINARY, "-x", "BUSY_MS=2000", "--", TESSERA_BUSY_WORKER});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "[worker 0] worker 0 done")) << r.out;
  EXPECT_TRUE(Contains(r.out, "[worker 1] worker 1 done")) << r.out;
  EXPECT_FALSE(Contains(r.err, "stopped answering")) << r.err;
}

// Worker 0 returns an error from main while worker 1 waits for it in a reduction (and, told so,
// returns kExitAnotherWorkerFailed): the job stops at once, not after the runtime's 10-minute
// wait for a peer, with worker 0's own status, naming it.
TEST_F(FaultInjectionTest, WorkerReturningEarlyStopsTheJobAtOnce) {
  for (const std::string workers : {"2", "3"}) {
    SCOPED_TRACE(workers + " workers");
    RunResult r = Run({"run", "-w", workers, "-s", "1", "--server-bin", TESSERA_SERVER_BINARY, "--",
                       TESSERA_EARLY_EXIT_WORKER},
                      {});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_LT(r.elapsed, seconds(15)) << r.err;
    EXPECT_TRUE(Contains(r.err, "worker 0 gives up")) << r.err;
    EXPECT_TRUE(Contains(r.err, "worker 0 left the program")) << r.err;
    EXPECT_TRUE(Contains(r.err, "tessera: worker 0 (pid ")) << r.err;
    EXPECT_TRUE(Contains(r.err, ") exited with status 3; stopping the job")) << r.err;
    ExpectNoScratchDirectory();
  }
}

// A worker returns an error from main while the others wait for its clock on the parameter
// servers (a relaxed array's read at a loop's end): the servers see it wait at its final barrier
// and fail the others' reads at once, naming it, instead of the client's 10-minute wait. Those
// workers stop with 76 (a consequence); the job stops with the early worker's own status, naming
// it, whatever its rank.
TEST_F(FaultInjectionTest, WorkerReturningEarlyWhileOthersWaitOnTheServersStopsTheJob) {
  for (const auto& [early, servers] :
       std::vector<std::pair<std::string, std::string>>{{"0", "1"}, {"1", "2"}}) {
    SCOPED_TRACE("worker " + early + " returns early, " + servers + " servers");
    RunResult r = Run({"run", "-w", "2", "-s", servers, "--server-bin", TESSERA_SERVER_BINARY, "-x",
                       "EARLY_RANK=" + early, "--", TESSERA_PS_WAIT_WORKER},
                      {});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_LT(r.elapsed, seconds(15)) << r.err;
    EXPECT_TRUE(Contains(r.err, "worker " + early + " gives up")) << r.err;
    EXPECT_TRUE(Contains(r.err, "worker " + early + " waits at a barrier")) << r.err;
    EXPECT_TRUE(Contains(r.err, "did worker " + early + " stop early")) << r.err;
    EXPECT_TRUE(Contains(r.err, "stopping this worker (exit 76)")) << r.err;
    EXPECT_TRUE(Contains(r.err, "tessera: worker " + early + " (pid ")) << r.err;
    EXPECT_TRUE(Contains(r.err, ") exited with status 3; stopping the job")) << r.err;
    EXPECT_FALSE(Contains(r.err, "exited with status 76; stopping the job")) << r.err;
    EXPECT_FALSE(Contains(r.out, "ps_wait_worker: worker")) << r.out;  // none finished
    ExpectNoScratchDirectory();
  }
}

// mf and lda: only worker 0 writes --metrics, and /dev/full makes it fail after the first epoch
// (iteration); worker 1 learns so and stops with 76 (another worker failed). The job's status is
// worker 0's own, naming it.
TEST_F(FaultInjectionTest, MetricsWriteErrorOnWorker0IsTheJobsStatus) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> apps = {
      {"mf",
       {TESSERA_MF_BINARY, "--train", dir_ + "/ratings.txt", "--epochs", "50", "-k", "4"}},
      {"lda",
       {TESSERA_LDA_BINARY, "--docword", dir_ + "/docword.txt", "--iterations", "50", "--topics",
        "4"}}};
  for (const auto& [app, program] : apps) {
    std::vector<std::string> args = {"run", "-w", "2", "-s", "1", "--server-bin",
                                     TESSERA_SERVER_BINARY, "--"};
    args.insert(args.end(), program.begin(), program.end());
    args.insert(args.end(), {"--metrics", "/dev/full"});
    RunResult r = Run(args, {});
    EXPECT_EQ(r.exit_code, 1) << app << r.err;
    EXPECT_TRUE(Contains(r.err, "[worker 0] " + app + ": --metrics: DataLoss: cannot write metrics "
                                "to '/dev/full'"))
        << r.err;
    EXPECT_TRUE(Contains(r.err, "tessera: worker 0 (pid ")) << app << r.err;
    EXPECT_TRUE(Contains(r.err, ") exited with status 1; stopping the job")) << app << r.err;
    EXPECT_FALSE(Contains(r.err, "tessera: worker 1 (pid ")) << app << r.err;
  }
}

// The same under --max-restarts: the waiting worker stops with status 76 (another worker left
// the program), not by a signal, and the job fails with worker 0's own status, 3, a program's
// error: it is not restarted -- it would fail the same way every time.
TEST_F(FaultInjectionTest, WorkerReturningEarlyIsNotRestarted) {
  RunResult r = Run({"run", "-w", "2", "-s", "1", "--server-bin", TESSERA_SERVER_BINARY,
                     "--checkpoint-dir", dir_ + "/ckpt", "--max-restarts", "2", "--",
                     TESSERA_PS_WAIT_WORKER},
                    {});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_LT(r.elapsed, seconds(15)) << r.err;
  EXPECT_FALSE(Contains(r.err, "restarting it")) << r.err;
  EXPECT_EQ(Count(r.err, "worker 0 gives up"), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, "stopping this worker (exit 76): another worker left the program"))
      << r.err;
  EXPECT_FALSE(Contains(r.err, "signal 6")) << r.err;
  ExpectNoScratchDirectory();
}

// Under --from-env (tasks as srun starts them) each task exits with its process's status: the
// early worker's own (3, at once, not 75 after the heartbeat timeout), the worker stopped because
// of it 76, the coordinator and the server 75 (the job failed elsewhere); all within seconds.
TEST_F(FaultInjectionTest, FromEnvWorkerReturningEarlyExitsWithItsOwnStatus) {
  for (const int early : {0, 1}) {
    SCOPED_TRACE("worker " + std::to_string(early) + " returns early");
    const int port = FreePort();
    ASSERT_GT(port, 0);
    std::map<int, pid_t> tasks;
    const auto started = Clock::now();
    for (int rank : {0, 1, 2, 3}) {
      tasks[rank] = Start({"run", "-w", "2", "-s", "1", "--from-env", "--coordinator",
                           "127.0.0.1:" + std::to_string(port), "--heartbeat-timeout", "30",
                           "--server-bin", TESSERA_SERVER_BINARY, "--", TESSERA_PS_WAIT_WORKER},
                          {{"SLURM_PROCID", std::to_string(rank)},
                           {"SLURM_NTASKS", "4"},
                           {"TESSERA_JOB_SECRET", "early-secret-5d8e2a"},
                           {"EARLY_RANK", std::to_string(early)}});
    }
    const int early_task = 2 + early, other_task = 2 + (1 - early);
    for (int rank : {0, 1, 2, 3}) {
      SCOPED_TRACE("task " + std::to_string(rank));
      RunResult r = Wait(tasks[rank], seconds(30));
      const int expected = rank == early_task ? 3 : rank == other_task ? 76 : 75;
      EXPECT_EQ(r.exit_code, expected) << r.out << r.err;
      // Well within the heartbeat timeout (30 s): nothing waited for a silence.
      EXPECT_LT(Clock::now() - started, seconds(15));
      if (rank == 0) {
        EXPECT_TRUE(Contains(r.out + r.err, "worker(s) " + std::to_string(1 - early) +
                                                " exited without leaving the job"))
            << r.out << r.err;
      }
    }
  }
}

// Killing the launcher itself leaves no scratch directory behind: it is removed once the
// coordinator's endpoint is read, and a directory of a launcher killed before that is swept by
// the next launch, as is a worker's same-host inbox in /dev/shm (removed once its peers have
// connected, so left only by a job killed while its mesh formed).
TEST_F(FaultInjectionTest, KilledLauncherLeavesNoScratchDirectory) {
  // A directory as a launcher killed during start-up leaves it (its pid is long gone).
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string stale = dir_ + "/tessera-job-" + std::to_string(gone) + "-abcdef";
  ASSERT_EQ(mkdir(stale.c_str(), 0700), 0);
  std::ofstream(stale + "/coordinator.endpoint") << "tcp://127.0.0.1:1\n";
  const std::string stale_inbox = "/dev/shm/tessera-job-" + std::to_string(gone) + "-abcdef";
  struct stat shm;
  const bool have_shm = stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) &&
                        mkdir(stale_inbox.c_str(), 0700) == 0;
  if (have_shm) std::ofstream(stale_inbox + "/rounds") << "a worker's round slots";

  std::vector<std::string> args = {
      "run", "-w", "2", "-s", "1", "--log-level", "debug", "--server-bin", TESSERA_SERVER_BINARY,
      "--"};
  for (const std::string& a : Program(App::kMf)) args.push_back(a);
  const pid_t launcher = Start(args);
  ASSERT_TRUE(WaitForOutput([](const std::string& out, const std::string&) {
    return Contains(out, "[worker 0] epoch ");
  }));
  const auto pids = StartedPids(Slurp("stderr." + std::to_string(runs_)));
  if (have_shm) {
    struct stat st;
    EXPECT_NE(stat(stale_inbox.c_str(), &st), 0) << stale_inbox << " was not swept";
    std::error_code ignored;
    std::filesystem::remove_all(stale_inbox, ignored);  // nothing stays, whatever the outcome
  }
  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  Wait(launcher, seconds(10));
  ExpectNoScratchDirectory();
  for (const auto& [label, pid] : pids) {
    const auto deadline = Clock::now() + seconds(5);  // the kernel's parent-death signal
    while (IsAlive(pid) && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
    EXPECT_FALSE(IsAlive(pid)) << label;
  }
}

}  // namespace
}  // namespace tessera::launcher::testing
