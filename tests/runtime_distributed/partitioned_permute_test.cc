// DistArray::permuted end to end (docs/runtime.md, "Permuted arrays"): partitioned_permute makes
// the word order of tokens that a distributed job loads partitioned by document. Each token must
// go once to the worker of its word's range (the shares' counts add up to the corpus, their
// ranges cover the words in rank order, and the loops' count and checksum across workers equal
// those computed here from the file); every worker's digests and the saved array must equal the
// serial run's. Also: shares left empty, a source serial code built (whole), and a result serial
// code reads (gathered whole).
#include <gtest/gtest.h>

#include <cinttypes>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "element_hash.h"
#include "job_test_base.h"

namespace {

using tessera::testing::ElementHash;

struct Entry {
  int doc, word, count;  // 1-based ids
};

// One worker's line "permuted array #A into #B: X of Y elements held by this worker, key[0] in
// [lo, hi) (partitioned; R rounds, ...".
struct Share {
  int64_t held = 0, total = 0, lo = 0, hi = 0, rounds = 0;
};

class PartitionedPermuteTest : public tessera::testing::JobTest {
 protected:
  // A docword file of `docs` documents over `words` words (skewed sizes, entries out of order).
  std::string WriteCorpus(const std::string& name, int docs, int words, unsigned seed) {
    std::mt19937 rng(seed);
    entries_.clear();
    for (int doc = 1; doc <= docs; ++doc) {
      if (doc == 7) continue;  // a document without tokens
      std::vector<int> ws(static_cast<size_t>(words));
      for (int w = 0; w < words; ++w) ws[static_cast<size_t>(w)] = w + 1;
      std::shuffle(ws.begin(), ws.end(), rng);
      const int n =
          1 +
          static_cast<int>(rng() % static_cast<unsigned>(std::min(words, doc % 10 == 0 ? 60 : 12)));
      for (int i = 0; i < n; ++i)
        entries_.push_back({doc, ws[static_cast<size_t>(i)], 1 + static_cast<int>(rng() % 5)});
    }
    std::shuffle(entries_.begin() + static_cast<std::ptrdiff_t>(entries_.size() / 3),
                 entries_.begin() + static_cast<std::ptrdiff_t>(entries_.size() / 2), rng);
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path);
    out << docs << "\n" << words << "\n" << entries_.size() << "\n";
    for (const Entry& e : entries_) out << e.doc << " " << e.word << " " << e.count << "\n";
    return path;
  }

  // The word order's count and checksum, from the file: tokens (doc, word, j) with j counting
  // each document's tokens in word order, value doc * 7 + j (0-based ids), as (word, doc, j).
  std::pair<int64_t, double> WordOrderSums() const {
    std::map<std::pair<int, int>, int> sorted;
    for (const Entry& e : entries_) sorted[{e.doc, e.word}] = e.count;
    int64_t count = 0, j = 0;
    double checksum = 0;
    int doc = -1;
    for (const auto& [dw, n] : sorted) {
      if (dw.first != doc) j = 0;
      doc = dw.first;
      for (int c = 0; c < n; ++c, ++j, ++count) {
        const int64_t d = dw.first - 1, w = dw.second - 1;
        checksum += ElementHash(w, d, j, d * 7 + j);
      }
    }
    return {count, checksum};
  }

  // partitioned_permute in `mode`, alone (workers 0) or under `tessera run -w workers`; returns
  // the exit code, the log in *log and, for each output `what`, worker 0's digest (which every
  // other worker's must equal) and the saved array's bytes.
  int Run(int workers, int threads, const std::string& mode, const std::string& path,
          const std::vector<std::string>& whats, std::string* log,
          std::map<std::string, std::pair<std::string, std::string>>* out) {
    const std::string name = mode + "w" + std::to_string(workers) + "t" + std::to_string(threads);
    std::vector<std::string> args = {PARTITIONED_PERMUTE_BINARY, dir_ + "/" + name, mode};
    if (!path.empty()) args.push_back(path);
    if (workers > 0) {
      args.insert(args.begin(), {TESSERA_LAUNCHER_BINARY, "run", "-w", std::to_string(workers),
                                 "-s", "1", "--log-level", "info", "--"});
    }
    const int rc = RunProcess(name, args, {{"TESSERA_THREADS", std::to_string(threads)}});
    *log = Read(dir_ + "/log." + name);
    for (const std::string& what : whats) {
      const std::string prefix = dir_ + "/" + name + "." + what;
      (*out)[what] = {Read(prefix + ".0"), Read(prefix + ".tarr")};
      for (int r = 1; r < workers && rc == 0; ++r) {
        EXPECT_EQ(Read(prefix + "." + std::to_string(r)), (*out)[what].first)
            << "worker " << r << " of " << name << " " << what;
      }
    }
    return rc;
  }

  // The shares of the `nth` partitioned array the program permuted (from 0), as each worker
  // reports it.
  static std::map<int, Share> Shares(const std::string& log, int nth) {
    const std::regex re(
        R"(\[worker (\d+)\].*permuted array #\d+ into #\d+: (\d+) of (\d+) elements held by this worker, key\[0\] in \[(\d+), (\d+)\) \(partitioned; (\d+) rounds)");
    std::map<int, int> seen;
    std::map<int, Share> shares;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
      const int worker = std::stoi((*it)[1]);
      if (seen[worker]++ != nth) continue;
      shares[worker] = {std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4]),
                        std::stoll((*it)[5]), std::stoll((*it)[6])};
    }
    return shares;
  }

  // The shares add up to `total`, each in its own key[0] range, the ranges covering [0, rows) in
  // rank order; returns how many shares are empty.
  static int ExpectShares(const std::map<int, Share>& shares, int workers, int64_t total,
                          int64_t rows, const std::string& log) {
    EXPECT_EQ(shares.size(), static_cast<size_t>(workers)) << log;
    int64_t sum = 0, next = 0;
    int empty = 0;
    for (const auto& [rank, s] : shares) {
      EXPECT_EQ(s.total, total) << "worker " << rank;
      EXPECT_EQ(s.lo, next) << "worker " << rank;
      EXPECT_LE(s.lo, s.hi) << "worker " << rank;
      next = s.hi;
      sum += s.held;
      empty += s.held == 0;
    }
    EXPECT_EQ(next, rows) << log;
    EXPECT_EQ(sum, total) << log;
    return empty;
  }

  std::vector<Entry> entries_;
};

// The tokens' word order: the first array the program permutes.
constexpr int kTokensW = 0;

TEST_F(PartitionedPermuteTest, EachTokenGoesOnceToItsWordsWorker) {
  constexpr int kDocs = 150, kWords = 90;
  const std::string path = WriteCorpus("docword.txt", kDocs, kWords, 5);
  const auto [tokens, checksum] = WordOrderSums();
  std::string log;
  std::map<std::string, std::pair<std::string, std::string>> serial;
  ASSERT_EQ(Run(0, 1, "tokens", path, {"w", "d"}, &log, &serial), 0) << log;
  char head[200];
  std::snprintf(head, sizeof(head), "shape %d %d", kWords, kDocs);
  EXPECT_EQ(serial["w"].first.rfind(head, 0), 0u) << serial["w"].first.substr(0, 200);
  std::snprintf(head, sizeof(head), " nnz %" PRId64 " counted %" PRId64 " checksum %.17g\n", tokens,
                tokens, checksum);
  EXPECT_NE(serial["w"].first.find(head), std::string::npos) << serial["w"].first.substr(0, 200);
  EXPECT_FALSE(serial["w"].second.empty());

  for (const auto& [workers, threads] :
       std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {4, 1}, {2, 2}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + " threads " + std::to_string(threads));
    std::map<std::string, std::pair<std::string, std::string>> split;
    ASSERT_EQ(Run(workers, threads, "tokens", path, {"w", "d"}, &log, &split), 0) << log;
    EXPECT_EQ(split["w"].first, serial["w"].first);
    EXPECT_EQ(split["w"].second, serial["w"].second) << "the saved word order differs";
    EXPECT_EQ(split["d"].first, serial["d"].first);
    const std::map<int, Share> shares = Shares(log, kTokensW);
    EXPECT_EQ(ExpectShares(shares, workers, tokens, kWords, log), 0);
    for (const auto& [rank, s] : shares) EXPECT_GE(s.rounds, 8) << "worker " << rank;
    // The loops ran where the load and the permutation put the tokens: nothing gathered whole,
    // nothing moved (a loop's W x T equal-count cuts put the workers' bounds where the
    // permutation's W cuts are, whatever T).
    const auto [relayouts, gathers] = Moves(log);
    EXPECT_EQ(gathers, 0) << log;
    EXPECT_EQ(relayouts, 0) << log;
    EXPECT_EQ(Count(log, "whole on every worker"), 0) << log;
  }
}

// assign_permuted between the tokens and their word order, both partitioned, around sweeps that
// read their own rows: every worker's digests equal the serial run's; each worker makes one plan
// for the pair (used in both directions), nothing is gathered whole or moved, and after the plan
// an exchange sends values alone, each at most once: all workers together at most 8 bytes per
// token, plus each round's message headers.
TEST_F(PartitionedPermuteTest, OrdersHandEachOtherTheirValuesWhereTheyLive) {
  constexpr int kDocs = 150, kWords = 90;
  const std::string path = WriteCorpus("docword.txt", kDocs, kWords, 7);
  const int64_t tokens = WordOrderSums().first;
  std::string log;
  std::map<std::string, std::pair<std::string, std::string>> serial;
  ASSERT_EQ(Run(0, 1, "assign", path, {"w", "d"}, &log, &serial), 0) << log;
  EXPECT_NE(log.find("assign bytes 0\n"), std::string::npos) << log;
  for (const auto& [workers, threads] :
       std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {4, 1}, {2, 2}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + " threads " + std::to_string(threads));
    std::map<std::string, std::pair<std::string, std::string>> split;
    ASSERT_EQ(Run(workers, threads, "assign", path, {"w", "d"}, &log, &split), 0) << log;
    EXPECT_EQ(split["w"].first, serial["w"].first);
    EXPECT_EQ(split["d"].first, serial["d"].first);
    const auto [relayouts, gathers] = Moves(log);
    EXPECT_EQ(gathers, 0) << log;
    EXPECT_EQ(relayouts, 0) << log;
    EXPECT_EQ(Count(log, "whole on every worker"), 0) << log;
    const std::regex plan(
        R"(\[worker (\d+)\].*assign_permuted #\d+ -> #\d+: plan made \(partitioned; (\d+) elements assigned here, plan \d+ B, (\d+) rounds)");
    const std::regex bytes(R"(\[worker (\d+)\] assign bytes (\d+))");
    std::map<int, std::pair<int64_t, int64_t>> planned;  // worker -> (elements, rounds)
    for (auto it = std::sregex_iterator(log.begin(), log.end(), plan); it != std::sregex_iterator();
         ++it) {
      EXPECT_EQ(planned.count(std::stoi((*it)[1])), 0u) << "one plan per worker: " << log;
      planned[std::stoi((*it)[1])] = {std::stoll((*it)[2]), std::stoll((*it)[3])};
    }
    EXPECT_EQ(planned.size(), static_cast<size_t>(workers)) << log;
    int reported = 0;
    int64_t sent = 0, headers = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), bytes);
         it != std::sregex_iterator(); ++it, ++reported) {
      const int64_t mine = std::stoll((*it)[2]);
      EXPECT_GT(mine, 0) << "worker " << (*it)[1];
      sent += mine;
      headers += 64 * planned[std::stoi((*it)[1])].second * workers;
    }
    EXPECT_EQ(reported, workers) << log;
    EXPECT_LE(sent, 8 * tokens + headers) << log;
  }
}

TEST_F(PartitionedPermuteTest, AWorkerMayHoldNoneOfTheResult) {
  // Two words only: at -w 4 two workers' ranges hold no token.
  const std::string path = WriteCorpus("two_words.txt", 60, 2, 9);
  const auto [tokens, checksum] = WordOrderSums();
  std::string log;
  std::map<std::string, std::pair<std::string, std::string>> serial, split;
  ASSERT_EQ(Run(0, 1, "tokens", path, {"w", "d"}, &log, &serial), 0) << log;
  ASSERT_EQ(Run(4, 1, "tokens", path, {"w", "d"}, &log, &split), 0) << log;
  EXPECT_EQ(split["w"], serial["w"]);
  EXPECT_EQ(split["d"], serial["d"]);
  EXPECT_GE(ExpectShares(Shares(log, kTokensW), 4, tokens, 2, log), 2) << log;
}

TEST_F(PartitionedPermuteTest, AWholeSourceIsSplitWithoutMessages) {
  std::string log;
  std::map<std::string, std::pair<std::string, std::string>> serial, split;
  ASSERT_EQ(Run(0, 1, "whole", "", {"j", "k"}, &log, &serial), 0) << log;
  int64_t nnz = 0;
  ASSERT_EQ(std::sscanf(serial["j"].first.c_str(), "shape 3 5 40 nnz %" SCNd64, &nnz), 1)
      << serial["j"].first.substr(0, 100);
  for (int workers : {2, 4}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    ASSERT_EQ(Run(workers, 1, "whole", "", {"j", "k"}, &log, &split), 0) << log;
    EXPECT_EQ(split["j"], serial["j"]);
    EXPECT_EQ(split["k"], serial["k"]);
    // Both permuted arrays are kept partitioned: no round, no byte.
    const int empty = ExpectShares(Shares(log, 0), workers, nnz, 3, log);
    if (workers == 4) {
      EXPECT_GE(empty, 1) << log;
    }
    ExpectShares(Shares(log, 1), workers, nnz, 5, log);
    EXPECT_EQ(Count(log, "(partitioned; 0 rounds, 0 B sent"), 2 * workers) << log;
  }
}

TEST_F(PartitionedPermuteTest, AResultSerialCodeReadsIsWholeOnEveryWorker) {
  const std::string path = WriteCorpus("docword.txt", 80, 40, 13);
  std::string log;
  std::map<std::string, std::pair<std::string, std::string>> serial, split;
  ASSERT_EQ(Run(0, 1, "serialuse", path, {"w"}, &log, &serial), 0) << log;
  ASSERT_EQ(Run(3, 1, "serialuse", path, {"w"}, &log, &split), 0) << log;
  EXPECT_EQ(split["w"], serial["w"]);
  EXPECT_EQ(Count(log, "elements, whole on every worker"), 3) << log;
  EXPECT_TRUE(Shares(log, kTokensW).empty()) << log;
}

}  // namespace
