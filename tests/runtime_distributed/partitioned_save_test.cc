// Saving partitioned arrays end to end (tessera/array_io.h, distributed/array_save.h):
// partitioned_save's arrays are touched only by loops and by save_array calls every worker
// makes, so under `tessera run -w W` they stay partitioned and worker 0 writes each file from
// the rows the workers stream to it. Every file must equal byte for byte the serial run's where
// the loop's result is bit-exact (counts, the untrained array, the ratings), and the file each
// worker saves from a whole copy of the same array where it is not (W and H: the 2d order of
// updates rounds differently); the arrays, the sparse ratings included, must still be
// partitioned afterwards; and a save that only some workers make, or that worker 0 cannot write,
// must fail every worker with a clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "job_test_base.h"

namespace {

namespace fs = std::filesystem;

// Equal to the serial run's files.
const std::vector<std::string> kExact = {"user_count.tarr", "item_bias.tarr", "item_bias.txt",
                                         "C.tarr", "ratings.tarr", "ratings.txt"};
// Equal to the whole copies' files (<name>.whole.<rank>.<ext>).
const std::vector<std::pair<std::string, std::string>> kTrained = {
    {"W", "tarr"}, {"W", "txt"}, {"H", "tarr"}, {"H", "txt"}};

class PartitionedSaveTest : public tessera::testing::JobTest {
 protected:
  void SetUp() override {
    JobTest::SetUp();
    std::mt19937 rng(3);
    std::set<std::pair<int, int>> seen;
    std::ofstream train(dir_ + "/train.txt");
    for (int n = 0; n < 3000; ++n) {
      const int user = static_cast<int>(rng() % 400);
      const int item = static_cast<int>(rng() % (1 + rng() % 300));
      if (!seen.insert({user, item}).second) continue;
      train << user << "\t" << item << "\t" << 1 + rng() % 5 << "\n";
    }
  }

  // partitioned_save alone (workers == 0) or under `tessera run -w workers`, saving into
  // dir_/<name>/; returns the exit code, the log in *log.
  int Run(const std::string& name, int workers, int threads, const std::string& mode,
          std::string* log, const std::string& save_dir = "") {
    const std::string out = dir_ + "/" + name;
    fs::create_directories(out);
    const std::string save = save_dir.empty() ? out : save_dir;
    std::vector<std::string> args;
    if (workers > 0) {
      args = {TESSERA_LAUNCHER_BINARY, "run",  "-w", std::to_string(workers), "-s", "1",
              "--log-level",           "info", "--"};
    }
    for (const std::string& a :
         {std::string(PARTITIONED_SAVE_BINARY), out, save, dir_ + "/train.txt", mode}) {
      args.push_back(a);
    }
    const int rc = RunProcess(name, args, {{"TESSERA_THREADS", std::to_string(threads)}});
    *log = Read(dir_ + "/log." + name);
    return rc;
  }

  std::string Status(const std::string& name, int rank) {
    return Read(dir_ + "/" + name + "/status." + std::to_string(rank));
  }
};

TEST_F(PartitionedSaveTest, EveryWorkerSavesAndWorkerZeroWritesTheSerialFilesByteForByte) {
  std::string log;
  ASSERT_EQ(Run("serial", 0, 1, "all", &log), 0) << log;
  for (const std::string& f : kExact) ASSERT_FALSE(Read(dir_ + "/serial/" + f).empty()) << f;
  for (const auto& [workers, threads] :
       std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {4, 1}, {2, 2}}) {
    const std::string name = "w" + std::to_string(workers) + "t" + std::to_string(threads);
    const std::string at = dir_ + "/" + name + "/";
    ASSERT_EQ(Run(name, workers, threads, "all", &log), 0) << log;
    for (int r = 0; r < workers; ++r) EXPECT_EQ(Status(name, r), "ok\n") << name << " " << r;
    for (const std::string& f : kExact) {
      EXPECT_EQ(Read(at + f), Read(dir_ + "/serial/" + f))
          << f << " saved by " << name << " differs from the serial file";
      EXPECT_FALSE(fs::exists(at + f + ".tmp")) << f;
    }
    for (const auto& [array, ext] : kTrained) {
      const std::string saved = Read(at + array + "." + ext);
      ASSERT_FALSE(saved.empty()) << array << "." << ext << " of " << name;
      for (int r = 0; r < workers; ++r) {
        EXPECT_EQ(saved, Read(at + array + ".whole." + std::to_string(r) + "." + ext))
            << array << "." << ext << " saved partitioned by " << name << " differs from worker "
            << r << "'s whole copy";
      }
    }
    // The saves kept the dense arrays partitioned: no worker holds all rows of them all, and
    // no loop or save made them whole.
    const std::regex held(R"(this worker holds (\d+) of its (\d+) rows)");
    int partial = 0, arrays = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), held); it != std::sregex_iterator();
         ++it) {
      ++arrays;
      partial += std::stoll((*it)[1]) < std::stoll((*it)[2]);
    }
    EXPECT_GE(arrays, 5 * workers) << log;
    EXPECT_GT(partial, 0) << log;
    const std::regex whole(R"((\d+) loops that needed them whole)");
    int reports = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), whole);
         it != std::sregex_iterator(); ++it, ++reports) {
      EXPECT_EQ((*it)[1], "0") << log;
    }
    EXPECT_EQ(reports, workers) << log;
    // The saves kept the ratings (a sparse array) partitioned too: no worker gathered them.
    EXPECT_EQ(Moves(log).second, 0) << log;
    EXPECT_EQ(Count(log, " gathered whole"), workers) << log;
  }
}

TEST_F(PartitionedSaveTest, ASaveOnlyWorkerZeroMakesFailsClearlyInsteadOfHanging) {
  std::string log;
  EXPECT_NE(Run("rank0", 2, 1, "rank0-only", &log), 0) << log;
  EXPECT_NE(Status("rank0", 0).find("is collective: every worker must call it"), std::string::npos)
      << Status("rank0", 0) << log;
  EXPECT_FALSE(fs::exists(dir_ + "/rank0/W.tarr"));
  EXPECT_FALSE(fs::exists(dir_ + "/rank0/W.tarr.tmp"));
}

TEST_F(PartitionedSaveTest, AFileWorkerZeroCannotWriteFailsEveryWorkerWithItsError) {
  const std::string missing = dir_ + "/no/such/dir";
  std::string log;
  EXPECT_NE(Run("unwritable", 3, 1, "all", &log, missing), 0) << log;
  for (int r = 0; r < 3; ++r) {
    const std::string s = Status("unwritable", r);
    EXPECT_NE(s.find("cannot create '" + missing + "/W.tarr'"), std::string::npos)
        << "worker " << r << ": " << s << log;
  }
}

}  // namespace
