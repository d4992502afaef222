// Code outside loops reading and writing single elements of arrays a distributed job keeps
// partitioned (DistArray::FetchRow, PartitionedArrays::FetchRow): serial_access's arrays are
// touched only by loops and by such accesses, so under `tessera run -w W` they stay partitioned,
// each access fetching the row from its holder (or computing it from the factory's recipe when
// no worker has yet). Its loops are exact, so every worker must print what the serial run
// prints, byte for byte; afterwards no array may have been made whole.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "job_test_base.h"

namespace {

class SerialAccessTest : public tessera::testing::JobTest {
 protected:
  void SetUp() override {
    JobTest::SetUp();
    std::mt19937 rng(5);
    std::set<std::pair<int, int>> seen;
    std::ofstream train(dir_ + "/train.txt");
    for (int n = 0; n < 3000; ++n) {
      const int user = static_cast<int>(rng() % 300);
      const int item = static_cast<int>(rng() % (1 + rng() % 200));
      if (!seen.insert({user, item}).second) continue;
      train << user << "\t" << item << "\t" << 1 + rng() % 5 << "\n";
    }
  }

  // serial_access alone (workers == 0) or under `tessera run -w workers`, writing into
  // dir_/<name>/; returns the exit code, the log in *log.
  int Run(const std::string& name, int workers, int threads, std::string* log) {
    const std::string out = dir_ + "/" + name;
    std::filesystem::create_directories(out);
    std::vector<std::string> args;
    if (workers > 0) {
      args = {TESSERA_LAUNCHER_BINARY, "run",  "-w", std::to_string(workers), "-s", "1",
              "--log-level",           "info", "--"};
    }
    for (const std::string& a : {std::string(SERIAL_ACCESS_BINARY), out, dir_ + "/train.txt"}) {
      args.push_back(a);
    }
    const int rc = RunProcess(name, args, {{"TESSERA_THREADS", std::to_string(threads)}});
    *log = Read(dir_ + "/log." + name);
    return rc;
  }
};

TEST_F(SerialAccessTest, EveryWorkerComputesTheSerialValuesAndTheArraysStayPartitioned) {
  std::string log;
  ASSERT_EQ(Run("serial", 0, 1, &log), 0) << log;
  const std::string serial = Read(dir_ + "/serial/out.0");
  ASSERT_NE(serial.find("total "), std::string::npos) << serial << log;
  for (const auto& [workers, threads] :
       std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {4, 1}, {2, 2}}) {
    const std::string name = "w" + std::to_string(workers) + "t" + std::to_string(threads);
    ASSERT_EQ(Run(name, workers, threads, &log), 0) << log;
    for (int r = 0; r < workers; ++r) {
      EXPECT_EQ(Read(dir_ + "/" + name + "/out." + std::to_string(r)), serial)
          << "worker " << r << " of " << name << "\n" << log;
    }
    // Rows were fetched, no loop needed the arrays whole, and they are still split.
    const std::regex report(
        R"((\d+) loops that needed them whole, (\d+) rows fetched for code outside loops)");
    int reports = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), report);
         it != std::sregex_iterator(); ++it, ++reports) {
      EXPECT_EQ((*it)[1], "0") << log;
      EXPECT_GT(std::stoll((*it)[2]), 0) << log;
    }
    EXPECT_EQ(reports, workers) << log;
    const std::regex held(R"(this worker holds (\d+) of its (\d+) rows)");
    int arrays = 0, partial = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), held); it != std::sregex_iterator();
         ++it) {
      ++arrays;
      partial += std::stoll((*it)[1]) < std::stoll((*it)[2]);
    }
    EXPECT_EQ(arrays, 3 * workers) << log;
    EXPECT_GE(partial, 2 * workers) << log;
  }
}

}  // namespace
