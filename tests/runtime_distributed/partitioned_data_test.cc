// Partitioned data end to end (docs/runtime.md, "Partitioned data"): partitioned_data's ratings
// are touched only by loops, so under `tessera run -w W` each worker loads and keeps only its
// share, and loops that need another layout move the elements between workers. Every worker's
// digest must equal that of the same job with every record on every worker
// (TESSERA_PARTITIONED_DATA=0), and the logs must show the partitioning happened.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "job_test_base.h"

namespace {

class PartitionedDataTest : public tessera::testing::JobTest {
 protected:
  void SetUp() override {
    JobTest::SetUp();
    // Sparse ids (not 0..n-1) and a skewed number of ratings per user, in random file order.
    std::mt19937 rng(5);
    std::set<std::pair<int, int>> seen;
    std::ofstream train(dir_ + "/train.txt"), test(dir_ + "/test.txt");
    for (int n = 0; n < 1500; ++n) {
      const int user = 3 * static_cast<int>(rng() % (1 + rng() % 60)) + 1;
      const int item = 7 * static_cast<int>(rng() % 45) + 2;
      if (!seen.insert({user, item}).second) continue;
      (rng() % 5 == 0 ? test : train) << user << "\t" << item << "\t" << 1 + rng() % 5 << "\n";
    }
  }

  // partitioned_data under `tessera run -w workers`; returns the log; each worker's digest must
  // be the same, and is returned in *digest.
  std::string Run(int workers, int threads, const std::string& order, bool partitioned,
                  std::string* digest) {
    const std::string name = "w" + std::to_string(workers) + "t" + std::to_string(threads) + order +
                             (partitioned ? "p" : "r");
    std::map<std::string, std::string> env = {{"TESSERA_THREADS", std::to_string(threads)}};
    if (!partitioned) env["TESSERA_PARTITIONED_DATA"] = "0";
    const int rc = RunProcess(name,
                              {TESSERA_LAUNCHER_BINARY, "run", "-w", std::to_string(workers), "-s",
                               "1", "--log-level", "info", "--", PARTITIONED_DATA_BINARY,
                               dir_ + "/" + name, dir_ + "/train.txt", dir_ + "/test.txt", order},
                              env);
    const std::string log = Read(dir_ + "/log." + name);
    EXPECT_EQ(rc, 0) << log;
    *digest = Read(dir_ + "/" + name + ".0");
    EXPECT_FALSE(digest->empty()) << log;
    for (int r = 1; r < workers; ++r) {
      EXPECT_EQ(Read(dir_ + "/" + name + "." + std::to_string(r)), *digest)
          << "worker " << r << " of " << name;
    }
    return log;
  }
};

TEST_F(PartitionedDataTest, EachWorkerHoldsItsShareAndTheResultIsThatOfWholeCopies) {
  for (const auto& [workers, threads] :
       std::vector<std::pair<int, int>>{{2, 1}, {2, 2}, {3, 1}, {4, 1}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + " threads " + std::to_string(threads));
    std::string whole, split;
    const std::string whole_log = Run(workers, threads, "sorted", false, &whole);
    EXPECT_EQ(Count(whole_log, "held by this worker"), 0) << whole_log;
    const std::string log = Run(workers, threads, "sorted", true, &split);
    EXPECT_EQ(split, whole);
    // Loaded partitioned: each worker holds a proper part.
    const std::regex held(R"((\d+) of (\d+) training and \d+ of \d+ held-out ratings held)");
    int64_t sum = 0, total = 0, lines = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), held); it != std::sregex_iterator();
         ++it) {
      sum += std::stoll((*it)[1]);
      total = std::stoll((*it)[2]);
      EXPECT_LT(std::stoll((*it)[1]), total) << log;
      ++lines;
    }
    EXPECT_EQ(lines, workers) << log;
    EXPECT_EQ(sum, total) << log;
    // The loop by item moved the elements; nothing was made whole.
    const auto [relayouts, gathers] = Moves(log);
    EXPECT_GE(relayouts, workers) << log;
    EXPECT_EQ(gathers, 0) << log;
    // The test loop read the item factors block by block as they rotated; no loop needed the
    // partitioned dense arrays whole.
    EXPECT_EQ(Count(log, "whose blocks of them rotate, so that no worker needs them whole"),
              workers)
        << log;
    EXPECT_EQ(Count(log, " 0 loops that needed them whole"), workers) << log;
    // The dense arrays kept partitioned: item_factor and item_table, which serial code never
    // touches, in proper parts, together every row once; by_user, by_item, user_state,
    // item_state and copy, whose every element serial code prints at the end, fetched piece by
    // piece from their holders, so every worker ends with all their rows.
    const std::regex rows(R"(partitioned array #(\d+): this worker holds (\d+) of its (\d+) rows)");
    std::map<int64_t, std::pair<int64_t, int64_t>> held_rows;  // array -> (sum, rows)
    std::map<int64_t, int> holders;
    std::map<int64_t, int> all_rows;  // array -> workers holding every row
    for (auto it = std::sregex_iterator(log.begin(), log.end(), rows); it != std::sregex_iterator();
         ++it) {
      const int64_t id = std::stoll((*it)[1]), n = std::stoll((*it)[2]), of = std::stoll((*it)[3]);
      held_rows[id].first += n;
      held_rows[id].second = of;
      ++holders[id];
      all_rows[id] += n == of;
    }
    EXPECT_EQ(held_rows.size(), 7u) << log;
    int kept_split = 0, fetched = 0;
    for (const auto& [id, sum_rows] : held_rows) {
      EXPECT_EQ(holders[id], workers) << "array #" << id;
      if (all_rows[id] == workers) {
        ++fetched;
        continue;
      }
      ++kept_split;
      EXPECT_EQ(all_rows[id], 0) << "array #" << id << "\n" << log;
      EXPECT_EQ(sum_rows.first, sum_rows.second) << "array #" << id << " rows held once\n" << log;
    }
    EXPECT_EQ(kept_split, 2) << log;
    EXPECT_EQ(fetched, 5) << log;
  }
}

TEST_F(PartitionedDataTest, ShufflingWithoutSortingGathersTheArrayWholeFirst) {
  std::string whole, split;
  Run(2, 1, "shuffled", false, &whole);
  const std::string log = Run(2, 1, "shuffled", true, &split);
  EXPECT_EQ(split, whole);
  EXPECT_EQ(Count(log, "held by this worker"), 2) << log;
  EXPECT_EQ(Moves(log).second, 2) << log;  // once on each worker
}

}  // namespace
