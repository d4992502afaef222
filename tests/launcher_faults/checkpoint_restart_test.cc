// Checkpoints on real jobs: `tessera run --checkpoint-dir` of mf (2D schedule, deterministic) and
// lda (a relaxed array, whose table the servers write into the checkpoint themselves). A process
// of any kind SIGKILLed at a random point after the first checkpoint, under --max-restarts, gives
// a job that still succeeds: mf's every epoch's RMSE equals an undisturbed run's bit for bit, and
// so does lda's log-likelihood with one worker (deterministic); with two workers and two servers
// (bounded staleness, not deterministic) lda ends at an undisturbed run's quality and the
// iterations it replays print what they printed before. A resumed run skips an incomplete newest
// checkpoint; a damaged file and bad directories are clear errors. TESSERA_FAULT_SEED=N replays
// one random point.
#include <dirent.h>
#include <poll.h>
#include <sys/inotify.h>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "tests/launcher/tessera_harness.h"

namespace tessera::launcher::testing {
namespace {

uint64_t SeedFromEnvOrRandom() {
  if (const char* s = std::getenv("TESSERA_FAULT_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// (iteration, loglik_per_token) of every line of an lda --metrics file, as printed.
std::vector<std::string> LogLikelihoods(const std::string& jsonl) {
  static const std::regex kLine(R"re("iteration":([0-9]+).*"loglik_per_token":([^,}]+))re");
  std::vector<std::string> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kLine)) out.push_back(m[1].str() + " " + m[2].str());
  }
  return out;
}

// "iter N ... ll/token X" lines worker 0 printed, split into attempts (a restarted job prints
// its iterations from 1 again): attempts[a][N] = X.
std::vector<std::map<int, std::string>> PrintedLogLikelihoods(const std::string& out) {
  static const std::regex kLine(R"re(\[worker 0\] iter +([0-9]+) +ll/token (\S+))re");
  std::vector<std::map<int, std::string>> attempts;
  int last = 1 << 30;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), kLine); it != std::sregex_iterator();
       ++it) {
    const int iter = std::stoi((*it)[1]);
    if (iter <= last) attempts.emplace_back();
    attempts.back()[iter] = (*it)[2];
    last = iter;
  }
  return attempts;
}

// (epoch, train_rmse, test_rmse) of every line of an mf --metrics file, as printed.
std::vector<std::string> Rmses(const std::string& jsonl) {
  static const std::regex kLine(
      R"re("epoch":([0-9]+).*"train_rmse":([^,}]+).*"test_rmse":([^,}]+))re");
  std::vector<std::string> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kLine))
      out.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str());
  }
  return out;
}

// Final log-likelihoods per token of two undisturbed two-worker runs of this lda job differ by
// up to about a third of this (bounded staleness; measured: five runs of 60 iterations ended
// between -6.712 and -6.697).
constexpr double kLdaTolerance = 0.05;

class CheckpointRestartTest : public TesseraHarness {
 protected:
  CheckpointRestartTest() : TesseraHarness(TESSERA_LAUNCHER_BINARY) {}

  void SetUp() override {
    TesseraHarness::SetUp();
    seed_ = SeedFromEnvOrRandom();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
    std::mt19937_64 gen(7);
    std::ofstream ratings(dir_ + "/ratings.txt");
    std::set<std::pair<int, int>> seen;
    while (seen.size() < 20000) {
      const int u = static_cast<int>(gen() % 400) + 1, i = static_cast<int>(gen() % 300) + 1;
      if (seen.insert({u, i}).second) ratings << u << '\t' << i << '\t' << gen() % 5 + 1 << '\n';
    }
    // 300 documents of 20 distinct words each (of 500), 1-3 occurrences.
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

  std::vector<std::string> LdaJob(int workers, int servers, const std::string& metrics,
                                  const std::vector<std::string>& extra, int iterations) const {
    std::vector<std::string> args = {"run",
                                     "-w",
                                     std::to_string(workers),
                                     "-s",
                                     std::to_string(servers),
                                     "--log-level",
                                     "debug",
                                     "--heartbeat-timeout",
                                     "3",
                                     "--server-bin",
                                     TESSERA_SERVER_BINARY};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const std::string& a :
         {std::string("--"), std::string(TESSERA_LDA_BINARY), std::string("--docword"),
          dir_ + "/docword.txt", std::string("--topics"), std::string("8"),
          std::string("--iterations"), std::to_string(iterations), std::string("--metrics"),
          dir_ + "/" + metrics}) {
      args.push_back(a);
    }
    return args;
  }

  // Starts `job` (run number `run`), waits for its first complete checkpoint in `ckpt` and then
  // for `more` more progress lines ("[worker 0] " + `progress`), and SIGKILLs `target`.
  void KillAfterFirstCheckpoint(int run, const std::string& ckpt, const std::string& progress,
                                size_t more, size_t total, const std::string& target) {
    const std::string out = "stdout." + std::to_string(run), err = "stderr." + std::to_string(run);
    const auto deadline = Clock::now() + seconds(60);
    while (CompleteCheckpoints(ckpt) == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_GT(CompleteCheckpoints(ckpt), 0) << Slurp(err);
    const std::string line = "[worker 0] " + progress;
    const size_t at = Count(Slurp(out), line);
    while (Count(Slurp(out), line) < at + more && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_LT(Count(Slurp(out), line), total) << "the job ended before the fault";
    const std::map<std::string, pid_t> pids = StartedPids(Slurp(err));
    ASSERT_TRUE(pids.contains(target)) << target << "\n" << Slurp(err);
    ASSERT_EQ(kill(pids.at(target), SIGKILL), 0);
  }

  std::vector<std::string> Job(const std::string& metrics, const std::vector<std::string>& extra,
                               int epochs, int workers = 2) const {
    std::vector<std::string> args = {"run",
                                     "-w",
                                     std::to_string(workers),
                                     "-s",
                                     "1",
                                     "--log-level",
                                     "debug",
                                     "--heartbeat-timeout",
                                     "3",
                                     "--server-bin",
                                     TESSERA_SERVER_BINARY};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const std::string& a :
         {std::string("--"), std::string(TESSERA_MF_BINARY), std::string("--train"),
          dir_ + "/ratings.txt", std::string("--test-fraction"), std::string("0.1"),
          std::string("-k"), std::string("8"), std::string("--epochs"), std::to_string(epochs),
          std::string("--metrics"), dir_ + "/" + metrics}) {
      args.push_back(a);
    }
    return args;
  }

  // Complete checkpoints (a MANIFEST) in `dir`.
  int CompleteCheckpoints(const std::string& dir) const {
    int n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      n += std::filesystem::exists(e.path() / "MANIFEST") ? 1 : 0;
    }
    return n;
  }

  static std::map<std::string, pid_t> StartedPids(const std::string& err) {
    static const std::regex kStarted("started ([a-z]+(?: [0-9]+)?) \\(pid ([0-9]+)\\)");
    std::map<std::string, pid_t> pids;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), kStarted);
         it != std::sregex_iterator(); ++it) {
      pids.try_emplace((*it)[1], static_cast<pid_t>(std::stoi((*it)[2])));
    }
    return pids;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(CheckpointRestartTest, KilledProcessIsRestartedAndTheResultIsBitExact) {
  SCOPED_TRACE("seed " + std::to_string(seed_) + " (replay with TESSERA_FAULT_SEED)");
  constexpr int kEpochs = 150;
  RunResult reference = Run(Job("reference.jsonl", {}, kEpochs));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const std::vector<std::string> expected = Rmses(Slurp("reference.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kEpochs));

  // The random point: any kind of process, after the first complete checkpoint plus 0-19 more
  // epochs. With a checkpoint before every loop (interval 0) the kill often lands while one is
  // being written, which the restarted job must not use. (A short interval: an epoch takes a
  // millisecond, a longer one could let the job end before its first checkpoint.)
  const std::vector<std::string> targets = {"worker 0", "worker 1", "server 0", "coordinator"};
  const std::string target = targets[rng_() % targets.size()];
  const size_t more = rng_() % 20;
  const std::string interval = rng_() % 2 == 0 ? "0" : "0.01";
  SCOPED_TRACE(target + " killed " + std::to_string(more) +
               " epochs after the first checkpoint, interval " + interval);
  const std::string ckpt = dir_ + "/ckpt";
  const pid_t launcher = Start(
      Job("restarted.jsonl",
          {"--checkpoint-dir", ckpt, "--checkpoint-interval", interval, "--max-restarts", "2"},
          kEpochs));
  KillAfterFirstCheckpoint(runs_, ckpt, "epoch ", more, kEpochs, target);

  RunResult r = Wait(launcher, seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "was killed by signal 9")) << r.err;
  EXPECT_TRUE(Contains(r.err, "restarting it from its newest checkpoint (restart 1 of 2)"))
      << r.err;
  EXPECT_TRUE(Contains(r.out + r.err, "resuming from " + ckpt)) << r.out << r.err;
  // Each worker held only its share of the ratings, also with checkpoints on, and restored it.
  EXPECT_TRUE(Contains(r.out + r.err, "(partitioned;")) << r.err;
  // The metrics file was rewritten by the restarted job: the replayed epochs from the logged
  // accumulators, the rest computed again from the restored arrays.
  EXPECT_EQ(Rmses(Slurp("restarted.jsonl")), expected);
}

// One worker and one server: lda is deterministic, so a restarted job ends bit-exact. The server
// is among the processes killed: its table (the topic totals) comes back from the file it wrote
// into the checkpoint.
TEST_F(CheckpointRestartTest, LdaOneWorkerRestartedAfterAKillIsBitExact) {
  SCOPED_TRACE("seed " + std::to_string(seed_) + " (replay with TESSERA_FAULT_SEED)");
  constexpr int kIterations = 60;
  RunResult reference = Run(LdaJob(1, 1, "reference.jsonl", {}, kIterations));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const std::vector<std::string> expected = LogLikelihoods(Slurp("reference.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kIterations));

  const std::vector<std::string> targets = {"server 0", "worker 0", "coordinator"};
  const std::string target = targets[rng_() % targets.size()];
  const size_t more = rng_() % 10;
  SCOPED_TRACE(target + " killed " + std::to_string(more) +
               " iterations after the first checkpoint");
  const std::string ckpt = dir_ + "/ckpt";
  const pid_t launcher = Start(
      LdaJob(1, 1, "restarted.jsonl",
             {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0", "--max-restarts", "2"},
             kIterations));
  KillAfterFirstCheckpoint(runs_, ckpt, "iter ", more, kIterations, target);
  RunResult r = Wait(launcher, seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "restarting it from its newest checkpoint (restart 1 of 2)"))
      << r.err;
  EXPECT_TRUE(Contains(r.out + r.err, "table(s), ")) << "the server wrote no table\n" << r.err;
  EXPECT_TRUE(Contains(r.out + r.err, "rows restored from the checkpoint")) << r.err;
  // Bit-exact, every iteration's log-likelihood included: a checkpoint keeps each accumulator's
  // partial sums, so an iteration whose log-likelihood loops (its document sweep, the totals'
  // term, the next word sweep) a restore splits adds as the undisturbed run did.
  EXPECT_EQ(LogLikelihoods(Slurp("restarted.jsonl")), expected);
  // Every iteration the first attempt printed, the restarted one printed alike (replayed, or
  // computed again from the checkpoint).
  // (A kill right after the first checkpoint can land before the first attempt printed any.)
  const auto attempts = PrintedLogLikelihoods(r.out);
  ASSERT_GE(attempts.size(), 1u) << r.out;
  ASSERT_LE(attempts.size(), 2u) << r.out;
  EXPECT_EQ(attempts.back().size(), static_cast<size_t>(kIterations)) << r.out;
  if (attempts.size() == 2) {
    for (const auto& [iter, ll] : attempts[0]) {
      EXPECT_EQ(attempts[1].at(iter), ll) << "iter " << iter;
    }
  } else {
    EXPECT_EQ(more, 0u) << "the first attempt printed no iteration\n" << r.out;
  }
}

// Two workers and two servers: bounded staleness makes lda non-deterministic, so the restarted
// job is compared by quality; the iterations it replays print exactly what the first attempt
// printed (from the logged accumulators), and a killed server's shard comes back from its file.
TEST_F(CheckpointRestartTest, LdaTwoWorkersRestartedAfterAKillEndsAtTheSameQuality) {
  SCOPED_TRACE("seed " + std::to_string(seed_) + " (replay with TESSERA_FAULT_SEED)");
  constexpr int kIterations = 60;
  RunResult reference = Run(LdaJob(2, 2, "reference.jsonl", {}, kIterations));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const std::vector<std::string> expected = LogLikelihoods(Slurp("reference.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kIterations));

  const std::vector<std::string> targets = {"worker 0", "worker 1", "server 0", "server 1",
                                            "coordinator"};
  const std::string target = targets[rng_() % targets.size()];
  const size_t more = rng_() % 10;
  SCOPED_TRACE(target + " killed " + std::to_string(more) +
               " iterations after the first checkpoint");
  const std::string ckpt = dir_ + "/ckpt";
  const pid_t launcher = Start(
      LdaJob(2, 2, "restarted.jsonl",
             {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0", "--max-restarts", "2"},
             kIterations));
  KillAfterFirstCheckpoint(runs_, ckpt, "iter ", more, kIterations, target);
  RunResult r = Wait(launcher, seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "restarting it from its newest checkpoint (restart 1 of 2)"))
      << r.err;
  static const std::regex kResumed(R"re(resuming from \S+/ckpt-0*([0-9]+))re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, kResumed) || std::regex_search(r.err, m, kResumed))
      << r.err;
  const int loop = std::stoi(m[1]);
  // Loops 0-2 count the documents' and words' tokens and draw the initial topics; iteration i
  // runs loops 3i .. 3i+2 (two sweeps and the topic totals' log-likelihood term), and is reported
  // after loop 3i+3, the sweep that adds its words' terms: those reported before the checkpoint
  // are replayed.
  const int replayed = std::max(0, (loop - 4) / 3);
  // A kill right after the first checkpoint may come before the first attempt printed anything.
  const auto attempts = PrintedLogLikelihoods(r.out);
  ASSERT_GE(attempts.size(), 1u) << r.out;
  ASSERT_LE(attempts.size(), 2u) << r.out;
  if (attempts.size() == 1) {
    EXPECT_EQ(replayed, 0) << r.out;
  }
  for (int iter = 1; attempts.size() == 2 && iter <= replayed; ++iter) {
    ASSERT_TRUE(attempts[0].contains(iter) && attempts[1].contains(iter)) << iter;
    EXPECT_EQ(attempts[1].at(iter), attempts[0].at(iter)) << "replayed iteration " << iter;
  }
  const std::vector<std::string> got = LogLikelihoods(Slurp("restarted.jsonl"));
  ASSERT_EQ(got.size(), static_cast<size_t>(kIterations));
  const double want = std::stod(expected.back().substr(expected.back().find(' ') + 1));
  const double final_ll = std::stod(got.back().substr(got.back().find(' ') + 1));
  EXPECT_NEAR(final_ll, want, kLdaTolerance) << "reference " << want << ", restarted " << final_ll;
}

TEST_F(CheckpointRestartTest, ResumeSkipsAnIncompleteCheckpointAndADamagedFileIsNamed) {
  constexpr int kEpochs = 8;
  const std::string ckpt = dir_ + "/ckpt";
  RunResult first =
      Run(Job("first.jsonl", {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0"}, kEpochs));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> expected = Rmses(Slurp("first.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kEpochs));

  // Three kept (13, 14, 15); the newest one loses its MANIFEST, as if the job died writing it.
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(ckpt)) kept.push_back(e.path());
  std::sort(kept.begin(), kept.end());
  ASSERT_EQ(kept.size(), 3u);
  std::filesystem::remove(kept[2] + "/MANIFEST");
  std::ofstream(kept[2] + "/MANIFEST.tmp") << "{\"format\": 1, \"loo";

  // Without --resume the directory is refused, before anything starts.
  RunResult refused = Run(Job("x.jsonl", {"--checkpoint-dir", ckpt}, kEpochs));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_TRUE(Contains(refused.err, "already holds checkpoints: add --resume")) << refused.err;

  RunResult resumed = Run(Job("resumed.jsonl", {"--checkpoint-dir", ckpt, "--resume"}, kEpochs));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string said = resumed.out + resumed.err;
  EXPECT_TRUE(Contains(said, kept[2] + " is incomplete (no MANIFEST); not used")) << said;
  EXPECT_TRUE(Contains(said, "resuming from " + kept[1])) << said;
  EXPECT_EQ(Rmses(Slurp("resumed.jsonl")), expected);

  // A damaged data file in the checkpoint a run resumes from stops it, naming the file.
  std::string victim;
  for (const auto& e : std::filesystem::directory_iterator(kept[1])) {
    if (e.path().extension() == ".bin") victim = e.path();
  }
  ASSERT_FALSE(victim.empty());
  {
    std::fstream io(victim, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(0);
    const char c = static_cast<char>(io.get());
    io.seekp(0);
    io.put(static_cast<char>(c ^ 0x5a));
  }
  std::filesystem::remove_all(kept[2]);  // so that kept[1] is the newest again
  RunResult damaged = Run(Job("damaged.jsonl", {"--checkpoint-dir", ckpt, "--resume"}, kEpochs));
  EXPECT_NE(damaged.exit_code, 0);
  EXPECT_TRUE(Contains(damaged.out + damaged.err, victim + ": crc32")) << damaged.err;
  EXPECT_TRUE(Contains(damaged.out + damaged.err, "the file is damaged")) << damaged.err;
}

// A checkpoint really interrupted while it is written: worker 0 (the only one that renames a
// checkpoint's MANIFEST into place) is stopped the moment a checkpoint's directory appears and,
// if its MANIFEST is not there yet, killed. The restarted job does not use that checkpoint, says
// so, resumes from the one before, and ends bit-exact.
TEST_F(CheckpointRestartTest, ACheckpointKilledMidWriteIsNeverUsed) {
  constexpr int kEpochs = 30;
  RunResult reference = Run(Job("reference.jsonl", {}, kEpochs));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const std::vector<std::string> expected = Rmses(Slurp("reference.jsonl"));

  const std::string ckpt = dir_ + "/ckpt";
  ASSERT_TRUE(std::filesystem::create_directory(ckpt));
  const int watch = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(watch, 0);
  ASSERT_GE(inotify_add_watch(watch, ckpt.c_str(), IN_CREATE | IN_MOVED_TO), 0);
  const pid_t launcher = Start(Job(
      "restarted.jsonl",
      {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0", "--max-restarts", "1"}, kEpochs));
  const std::string err = "stderr." + std::to_string(runs_);

  std::string interrupted;  // the checkpoint worker 0 was killed in the middle of
  pid_t worker0 = -1;
  int complete_seen = 0;
  const auto deadline = Clock::now() + seconds(60);
  while (interrupted.empty() && Clock::now() < deadline) {
    pollfd p{watch, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    alignas(inotify_event) char buf[4096];
    const ssize_t n = read(watch, buf, sizeof(buf));
    for (ssize_t at = 0; at < n && interrupted.empty();) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      if ((e->mask & IN_ISDIR) == 0 || e->len == 0) continue;
      const std::string name = ckpt + "/" + e->name;
      if (worker0 < 0) {
        const auto pids = StartedPids(Slurp(err));
        if (pids.contains("worker 0")) worker0 = pids.at("worker 0");
      }
      // After a complete one, so that there is one to resume from.
      if (worker0 < 0 || complete_seen == 0) {
        complete_seen = CompleteCheckpoints(ckpt);
        continue;
      }
      ASSERT_EQ(kill(worker0, SIGSTOP), 0);
      if (std::filesystem::exists(name + "/MANIFEST")) {
        kill(worker0, SIGCONT);  // written already: try the next one
        continue;
      }
      interrupted = name;
      ASSERT_EQ(kill(worker0, SIGKILL), 0);
    }
  }
  close(watch);
  ASSERT_FALSE(interrupted.empty()) << "no checkpoint caught while written\n" << Slurp(err);

  RunResult r = Wait(launcher, seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "restarting it from its newest checkpoint (restart 1 of 1)"))
      << r.err;
  const std::string said = r.out + r.err;
  EXPECT_TRUE(Contains(said, interrupted + " is incomplete (no MANIFEST); not used")) << said;
  EXPECT_TRUE(Contains(said, "resuming from " + ckpt)) << said;
  EXPECT_FALSE(Contains(said, "resuming from " + interrupted)) << said;
  EXPECT_EQ(Rmses(Slurp("restarted.jsonl")), expected);
}

// The ratings stay partitioned with checkpoints on: each worker writes the records it holds, and
// only those (keys in its own range), and the workers' shares add up to the whole array. A run
// resumed with another number of workers reads every share and keeps its own key range.
TEST_F(CheckpointRestartTest, PartitionedRecordsAreWrittenByTheirHolders) {
  constexpr int kEpochs = 4;
  const std::string ckpt = dir_ + "/ckpt";
  RunResult first =
      Run(Job("first.jsonl", {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0"}, kEpochs));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> expected = Rmses(Slurp("first.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kEpochs));
  // "loaded PATH: N of M training and ... held by this worker": M, the whole training set.
  static const std::regex kLoaded(
      R"re(\[worker ([01])\].*loaded \S+: ([0-9]+) of ([0-9]+) training)re");
  std::map<int, int64_t> held;
  int64_t training = 0;
  const std::string said = first.out + first.err;
  for (auto it = std::sregex_iterator(said.begin(), said.end(), kLoaded);
       it != std::sregex_iterator(); ++it) {
    held[std::stoi((*it)[1])] = std::stoll((*it)[2]);
    training = std::stoll((*it)[3]);
  }
  ASSERT_EQ(held.size(), 2u) << "the ratings were not loaded partitioned\n" << said;

  std::string newest;
  for (const auto& e : std::filesystem::directory_iterator(ckpt)) {
    newest = std::max(newest, e.path().string());
  }
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const nlohmann::json m = nlohmann::json::parse(read(newest + "/MANIFEST"));
  int partitioned = 0;
  for (const auto& a : m.at("arrays")) {
    if (!a.value("partitioned", false)) continue;
    ++partitioned;
    SCOPED_TRACE("array " + a.at("id").dump());
    const int64_t count = a.at("count").get<int64_t>();
    ASSERT_EQ(a.at("files").size(), 2u);
    int64_t sum = 0;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const auto& f : a.at("files")) {
      const auto& share = f.at("share");
      const int worker = share.at("worker").get<int>();
      const int64_t n = share.at("count").get<int64_t>();
      const int dim = share.at("dim").get<int>();
      const int64_t lo = share.at("lo").get<int64_t>(), hi = share.at("hi").get<int64_t>();
      EXPECT_EQ(f.at("name").get<std::string>(),
                "a" + a.at("id").dump() + "-w" + std::to_string(worker) + ".bin");
      EXPECT_GT(n, 0);
      EXPECT_LT(n, count) << "worker " << worker << " wrote the whole array";
      // Keys (2 x int64), the value (float), the place in the serial order (2 x uint64).
      const std::string bytes = read(newest + "/" + f.at("name").get<std::string>());
      ASSERT_EQ(static_cast<int64_t>(bytes.size()), n * (16 + 4 + 16));
      for (int64_t i = 0; i < n; ++i) {
        int64_t key[2];
        std::memcpy(key, bytes.data() + i * 16, sizeof(key));
        ASSERT_TRUE(key[dim] >= lo && key[dim] < hi)
            << "worker " << worker << " wrote a record outside its range [" << lo << ", " << hi
            << ")";
      }
      ranges.push_back({lo, hi});
      sum += n;
    }
    EXPECT_EQ(sum, count);
    std::sort(ranges.begin(), ranges.end());
    EXPECT_LE(ranges[0].second, ranges[1].first) << "the workers' ranges overlap";
    if (count == training) {
      // The training set: the shares are what each worker held after loading, moved by the
      // loops' layouts at most, never copied.
      EXPECT_EQ(held[0] + held[1], count);
    }
  }
  EXPECT_EQ(partitioned, 2) << "the training and held-out ratings";

  // Resumed with 3 workers and with 1 (every share read, each worker keeping its key range, or
  // everything): the replayed epochs print what they printed, the run goes on to its end.
  for (int workers : {3, 1}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    const std::string metrics = "more" + std::to_string(workers) + ".jsonl";
    RunResult more =
        Run(Job(metrics, {"--checkpoint-dir", ckpt, "--resume"}, kEpochs + 2, workers));
    ASSERT_EQ(more.exit_code, 0) << more.err;
    EXPECT_TRUE(Contains(more.out + more.err, "resuming from " + newest)) << more.err;
    const std::vector<std::string> got = Rmses(Slurp(metrics));
    ASSERT_EQ(got.size(), static_cast<size_t>(kEpochs + 2));
    // Epochs 1 .. 3 were done before the newest checkpoint (loop 2 * 3 + 1 ... ) and replay.
    for (int e = 0; e + 1 < kEpochs; ++e) EXPECT_EQ(got[e], expected[e]) << "epoch " << e + 1;
  }
}

// mf --data-parallel with one worker is deterministic: a job restarted after its worker was
// killed ends bit-exact, which needs the data-parallel tables back as they were (a loop's result
// is the array plus what the table gained, and fresh tables round that sum differently).
TEST_F(CheckpointRestartTest, DataParallelTablesAreRestored) {
  SCOPED_TRACE("seed " + std::to_string(seed_) + " (replay with TESSERA_FAULT_SEED)");
  constexpr int kEpochs = 40;
  auto job = [&](const std::string& metrics, const std::vector<std::string>& extra) {
    std::vector<std::string> args = Job(metrics, extra, kEpochs, /*workers=*/1);
    args.push_back("--data-parallel");
    args.push_back("0");
    return args;
  };
  RunResult reference = Run(job("reference.jsonl", {}));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const std::vector<std::string> expected = Rmses(Slurp("reference.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kEpochs));

  const std::string target = rng_() % 2 == 0 ? "worker 0" : "server 0";
  const size_t more = rng_() % 10;
  SCOPED_TRACE(target + " killed " + std::to_string(more) + " epochs after the first checkpoint");
  const std::string ckpt = dir_ + "/ckpt";
  const pid_t launcher = Start(job(
      "restarted.jsonl",
      {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0", "--max-restarts", "2"}));
  KillAfterFirstCheckpoint(runs_, ckpt, "epoch ", more, kEpochs, target);
  RunResult r = Wait(launcher, seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "restarting it from its newest checkpoint (restart 1 of 2)"))
      << r.err;
  static const std::regex kResumed(R"re(resuming from \S+/ckpt-0*([0-9]+))re");
  std::smatch m;
  const std::string said = r.out + r.err;
  ASSERT_TRUE(std::regex_search(said, m, kResumed)) << said;
  // Loop 0 is the mean rating; from loop 1 on, the SGD loops make data-parallel tables.
  if (std::stoi(m[1]) > 1) {
    EXPECT_TRUE(Contains(said, "'data-parallel-array-")) << said;
    EXPECT_TRUE(Contains(said, "rows restored from the checkpoint")) << said;
  }
  EXPECT_EQ(Rmses(Slurp("restarted.jsonl")), expected);
}

// A 2d loop that rotates H starts where H's last rotation left it (docs/runtime.md, "Partitioned
// arrays"), so its order of time blocks depends on the rotating loops before it. Resuming from
// the checkpoint before an epoch's test loop (loop 2e; loop 0 is the mean), the loops replayed
// without running must still count: otherwise the next epoch's training visits its blocks in
// another order and its RMSE differs.
TEST_F(CheckpointRestartTest, ResumingBetweenTwoRotatingLoopsIsBitExact) {
  constexpr int kEpochs = 8;
  const std::string ckpt = dir_ + "/ckpt";
  RunResult first =
      Run(Job("first.jsonl", {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0"}, kEpochs));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> expected = Rmses(Slurp("first.jsonl"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kEpochs));
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(ckpt)) kept.push_back(e.path());
  std::sort(kept.begin(), kept.end());
  ASSERT_EQ(kept.size(), 3u);  // loops 14, 15 and 16
  ASSERT_TRUE(kept[0].ends_with("14")) << kept[0];
  std::filesystem::remove_all(kept[1]);
  std::filesystem::remove_all(kept[2]);

  RunResult resumed = Run(Job("resumed.jsonl", {"--checkpoint-dir", ckpt, "--resume"}, kEpochs));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(Contains(resumed.out + resumed.err, "resuming from " + kept[0])) << resumed.err;
  EXPECT_EQ(Rmses(Slurp("resumed.jsonl")), expected);
}

// The dense arrays the job keeps partitioned (mf's W and H: only loops touch them) are restored
// by their holders only: with the checkpoint's number of workers each worker reads the rows it
// wrote, none of the others', and holds them -- together the whole array, no row twice -- and the
// run goes on bit-exact.
TEST_F(CheckpointRestartTest, KeptPartitionedArraysAreRestoredOnTheirHoldersOnly) {
  constexpr int kEpochs = 8;
  const std::string ckpt = dir_ + "/ckpt";
  RunResult first =
      Run(Job("first.jsonl", {"--checkpoint-dir", ckpt, "--checkpoint-interval", "0"}, kEpochs));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> expected = Rmses(Slurp("first.jsonl"));
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(ckpt)) kept.push_back(e.path());
  std::sort(kept.begin(), kept.end());
  ASSERT_EQ(kept.size(), 3u);
  std::filesystem::remove_all(kept[1]);  // resume from the oldest: two epochs' loops still to run
  std::filesystem::remove_all(kept[2]);

  RunResult resumed = Run(Job("resumed.jsonl", {"--checkpoint-dir", ckpt, "--resume"}, kEpochs));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(Contains(resumed.out + resumed.err, "resuming from " + kept[0])) << resumed.err;
  EXPECT_EQ(Rmses(Slurp("resumed.jsonl")), expected);

  // array id -> rows held by each worker after the restore, and the array's rows.
  std::map<int, std::map<int, int64_t>> held;
  std::map<int, int64_t> rows;
  static const std::regex kRestored(
      R"(\[worker ([0-9]+)\] .*array #([0-9]+): restored the ([0-9]+) of its ([0-9]+) rows this )"
      R"(worker held)");
  const std::string said = resumed.out + resumed.err;
  for (auto it = std::sregex_iterator(said.begin(), said.end(), kRestored);
       it != std::sregex_iterator(); ++it) {
    held[std::stoi((*it)[2])][std::stoi((*it)[1])] = std::stoll((*it)[3]);
    rows[std::stoi((*it)[2])] = std::stoll((*it)[4]);
  }
  ASSERT_GE(held.size(), 2u) << said;  // W and H
  for (const auto& [id, by_worker] : held) {
    SCOPED_TRACE("array #" + std::to_string(id));
    ASSERT_EQ(by_worker.size(), 2u) << said;
    int64_t total = 0;
    for (const auto& [w, n] : by_worker) {
      EXPECT_GT(n, 0) << "worker " << w;
      EXPECT_LT(n, rows[id]) << "worker " << w;  // never the whole array
      total += n;
    }
    EXPECT_EQ(total, rows[id]);  // every row on exactly one worker
  }
}

TEST_F(CheckpointRestartTest, BadFlagsAndDirectoriesAreRefusedBeforeAnythingStarts) {
  std::ofstream(dir_ + "/plain-file") << "x";
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--checkpoint-dir", dir_ + "/plain-file"}, "exists and is not a directory"},
      {{"--checkpoint-dir", dir_ + "/plain-file/sub"}, "cannot create it"},
      {{"--checkpoint-dir", dir_ + "/d", "--checkpoint-interval", "-1"},
       "--checkpoint-interval must be a number of seconds >= 0"},
      {{"--resume"}, "--resume needs --checkpoint-dir"},
      {{"--max-restarts", "2"}, "--max-restarts needs --checkpoint-dir"},
      {{"--checkpoint-dir", dir_ + "/d", "--max-restarts", "-1"}, "--max-restarts must be >= 0"},
  };
  for (const Case& c : cases) {
    RunResult r = Run(Job("m.jsonl", c.flags, 1));
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_TRUE(Contains(r.err, c.message)) << c.message << "\n" << r.err;
    EXPECT_FALSE(Contains(r.err, "started worker")) << r.err;
  }
}

}  // namespace
}  // namespace tessera::launcher::testing
