// Partitioned docword loading end to end (docs/runtime.md, "Partitioned data"):
// partitioned_docword's counts are touched only by loops, so under `tessera run -w W` each worker
// parses its byte range and keeps only the entries of its documents' key range. The digest every
// worker writes must equal the serial run's and that of the same job with every entry on every
// worker (TESSERA_PARTITIONED_DATA=0); the workers' shares must add up to the file's entries,
// with the file's checksum, each in its own document range; bad input must fail every worker with
// the error a whole-file read gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "job_test_base.h"

namespace {

// As partitioned_docword_main.cc's EntryHash (0-based ids).
double EntryHash(int64_t doc, int64_t word, int32_t count) {
  uint64_t h = static_cast<uint64_t>(doc) * 1000003u + static_cast<uint64_t>(word) * 7919u +
               static_cast<uint64_t>(count);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<double>(h % 1000003u);
}

struct Entry {
  int doc, word, count;  // 1-based ids
};

class PartitionedDocwordTest : public tessera::testing::JobTest {
 protected:
  static constexpr int kDocs = 120, kWords = 200;

  void SetUp() override {
    JobTest::SetUp();
    // Skewed document sizes, documents mostly in order but entries within a document, and some
    // documents' runs, out of order; a few blank lines; documents 7 and 90 have no entries.
    std::mt19937 rng(11);
    for (int doc = 1; doc <= kDocs; ++doc) {
      if (doc == 7 || doc == 90) continue;
      std::vector<int> words(kWords);
      for (int w = 0; w < kWords; ++w) words[w] = w + 1;
      std::shuffle(words.begin(), words.end(), rng);
      const int n = 1 + static_cast<int>(rng() % (doc % 10 == 0 ? 150 : 25));
      for (int i = 0; i < n; ++i)
        entries_.push_back({doc, words[i], 1 + static_cast<int>(rng() % 6)});
    }
    // Move a block of entries late in the file: document ranges then straddle byte ranges.
    std::rotate(entries_.begin() + 100, entries_.begin() + 160, entries_.begin() + 400);
    path_ = dir_ + "/docword.txt";
    std::ofstream out(path_);
    out << kDocs << "\n" << kWords << "\n" << entries_.size() << "\n";
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      out << e.doc << " " << e.word << " " << e.count << "\n";
      if (i % 97 == 0) out << "\n";
    }
  }

  // partitioned_docword on `path`, alone (workers 0) or under `tessera run -w workers`; returns
  // the exit code, the output in *log and worker 0's digest in *digest, which every other
  // worker's must equal.
  int Run(int workers, int threads, const std::string& path, const std::string& mode,
          bool partitioned, std::string* log, std::string* digest) {
    const std::string name = "w" + std::to_string(workers) + "t" + std::to_string(threads) + mode +
                             (partitioned ? "p" : "r");
    std::map<std::string, std::string> env = {{"TESSERA_THREADS", std::to_string(threads)}};
    if (!partitioned) env["TESSERA_PARTITIONED_DATA"] = "0";
    std::vector<std::string> args = {PARTITIONED_DOCWORD_BINARY, dir_ + "/" + name, path, mode};
    if (workers > 0) {
      args.insert(args.begin(), {TESSERA_LAUNCHER_BINARY, "run", "-w", std::to_string(workers),
                                 "-s", "1", "--log-level", "info", "--"});
    }
    const int rc = RunProcess(name, args, env);
    *log = Read(dir_ + "/log." + name);
    *digest = Read(dir_ + "/" + name + ".0");
    for (int r = 1; r < workers && rc == 0; ++r) {
      EXPECT_EQ(Read(dir_ + "/" + name + "." + std::to_string(r)), *digest)
          << "worker " << r << " of " << name;
    }
    return rc;
  }

  // Under `tessera run -w workers`, the load (as counts, or as tokens with `mode` "tokens")
  // fails on every worker with `message`, quickly.
  void ExpectEveryWorkerFails(int workers, const std::string& path, const std::string& message,
                              const std::string& mode = "bydoc") {
    const auto start = std::chrono::steady_clock::now();
    std::string log, digest;
    EXPECT_NE(Run(workers, 1, path, mode, true, &log, &digest), 0) << log;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30)
        << "the failing job took too long to stop\n"
        << log;
    EXPECT_EQ(Count(log, "load failed: " + message), workers)
        << "every worker reports '" << message << "'\n"
        << log;
    EXPECT_TRUE(digest.empty()) << "a worker went on alone\n" << log;
  }

  std::vector<Entry> entries_;
  std::string path_;
};

TEST_F(PartitionedDocwordTest, EachWorkerHoldsItsDocumentsAndNoEntryIsLostOrDoubled) {
  double checksum = 0;
  for (const Entry& e : entries_) checksum += EntryHash(e.doc - 1, e.word - 1, e.count);
  std::string log, serial;
  ASSERT_EQ(Run(0, 1, path_, "byword", false, &log, &serial), 0) << log;
  char head[200];
  std::snprintf(head, sizeof(head), "nnz %zu tokens", entries_.size());
  ASSERT_NE(serial.find(head), std::string::npos) << serial.substr(0, 200);
  std::snprintf(head, sizeof(head), "entries %zu checksum %.17g\n", entries_.size(), checksum);
  ASSERT_NE(serial.find(head), std::string::npos) << serial.substr(0, 200);

  for (const auto& [workers, threads] : std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {2, 2}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + " threads " + std::to_string(threads));
    for (const std::string mode : {"bydoc", "byword"}) {
      SCOPED_TRACE(mode);
      std::string want = serial;
      if (mode == "bydoc") want.erase(want.find("word "));
      std::string whole_log, whole, split_log, split;
      ASSERT_EQ(Run(workers, threads, path_, mode, false, &whole_log, &whole), 0) << whole_log;
      EXPECT_EQ(whole, want);
      EXPECT_EQ(Count(whole_log, "held by this worker"), 0) << whole_log;
      ASSERT_EQ(Run(workers, threads, path_, mode, true, &split_log, &split), 0) << split_log;
      EXPECT_EQ(split, want);
      // Each worker holds the entries of its own document range, the ranges cover the documents
      // in rank order, and the shares add up to the file's entries.
      const std::regex held(
          R"(\[worker (\d+)\].*loaded \S+: (\d+) of (\d+) entries held by this worker, docs \[(\d+), (\d+)\))");
      std::map<int, std::pair<int64_t, int64_t>> ranges;
      int64_t sum = 0;
      for (auto it = std::sregex_iterator(split_log.begin(), split_log.end(), held);
           it != std::sregex_iterator(); ++it) {
        const int64_t mine = std::stoll((*it)[2]), total = std::stoll((*it)[3]);
        EXPECT_EQ(total, static_cast<int64_t>(entries_.size()));
        EXPECT_GT(mine, 0) << split_log;
        EXPECT_LT(mine, total) << split_log;
        sum += mine;
        ranges[std::stoi((*it)[1])] = {std::stoll((*it)[4]), std::stoll((*it)[5])};
      }
      EXPECT_EQ(sum, static_cast<int64_t>(entries_.size())) << split_log;
      ASSERT_EQ(ranges.size(), static_cast<size_t>(workers)) << split_log;
      int64_t next = 0;
      for (const auto& [rank, range] : ranges) {
        EXPECT_EQ(range.first, next) << "worker " << rank;
        EXPECT_LT(range.first, range.second) << "worker " << rank;
        next = range.second;
      }
      EXPECT_EQ(next, kDocs);
      // Loops by document ran on the entries where they were loaded; by word they moved; no loop
      // needed them whole.
      const auto [relayouts, gathers] = Moves(split_log);
      if (mode == "bydoc") {
        EXPECT_EQ(relayouts, 0) << split_log;
      } else {
        EXPECT_GE(relayouts, workers) << split_log;
      }
      EXPECT_EQ(gathers, 0) << split_log;
    }
  }
}

// DocwordOptions::tokens: one element per token, each on the worker of its document's
// equal-token range; the loops by document run where the tokens were loaded (no relayout, nothing
// gathered), also the one that reads its own document's row by name (sparse_row(key[0])).
TEST_F(PartitionedDocwordTest, TokensAreHeldByTheirDocumentsWorkerOnly) {
  // What the file holds as tokens: (doc, word, j) with j counting each document's tokens in word
  // order.
  std::map<std::pair<int, int>, int> sorted;
  for (const Entry& e : entries_) sorted[{e.doc, e.word}] = e.count;
  double checksum = 0;
  int64_t total = 0, longest = 0, j = 0;
  int doc = -1;
  for (const auto& [dw, count] : sorted) {
    if (dw.first != doc) j = 0;
    doc = dw.first;
    for (int c = 0; c < count; ++c, ++j)
      checksum += EntryHash(dw.first - 1, dw.second - 1, static_cast<int32_t>(j + 1));
    total += count;
    longest = std::max(longest, j);
  }
  std::string log, serial;
  ASSERT_EQ(Run(0, 1, path_, "tokens", false, &log, &serial), 0) << log;
  char head[300];
  std::snprintf(head, sizeof(head),
                "longest %" PRId64 " tokens %" PRId64 " counted %" PRId64 " written %" PRId64
                " checksum %.17g\n",
                longest, total, total, total, checksum);
  ASSERT_NE(serial.find(head), std::string::npos) << serial.substr(0, 300) << "\nwant " << head;

  ASSERT_NE(serial.find("rows "), std::string::npos) << serial.substr(0, 300);
  for (const auto& [workers, threads] : std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {2, 2}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + " threads " + std::to_string(threads));
    std::string whole_log, whole, split_log, split;
    ASSERT_EQ(Run(workers, threads, path_, "tokens", false, &whole_log, &whole), 0) << whole_log;
    EXPECT_EQ(whole, serial);
    ASSERT_EQ(Run(workers, threads, path_, "tokens", true, &split_log, &split), 0) << split_log;
    EXPECT_EQ(split, serial);
    const std::regex held(
        R"(\[worker (\d+)\].*held by this worker as (\d+) of (\d+) tokens, docs \[(\d+), (\d+)\))");
    std::map<int, std::pair<int64_t, int64_t>> ranges;
    int64_t sum = 0;
    for (auto it = std::sregex_iterator(split_log.begin(), split_log.end(), held);
         it != std::sregex_iterator(); ++it) {
      const int64_t mine = std::stoll((*it)[2]);
      EXPECT_EQ(std::stoll((*it)[3]), total);
      EXPECT_GT(mine, 0) << split_log;
      // Equal-token ranges: no worker holds much more than its share (a document is not split).
      EXPECT_LT(mine, total / workers + 200) << split_log;
      sum += mine;
      ranges[std::stoi((*it)[1])] = {std::stoll((*it)[4]), std::stoll((*it)[5])};
    }
    EXPECT_EQ(sum, total) << split_log;
    ASSERT_EQ(ranges.size(), static_cast<size_t>(workers)) << split_log;
    int64_t next = 0;
    for (const auto& [rank, range] : ranges) {
      EXPECT_EQ(range.first, next) << "worker " << rank;
      next = range.second;
    }
    EXPECT_EQ(next, kDocs);
    const auto [relayouts, gathers] = Moves(split_log);
    EXPECT_EQ(relayouts, 0) << split_log;
    EXPECT_EQ(gathers, 0) << split_log;
  }
}

// A loop whose body reads the next document's row: that row may be held by another worker, so
// the tokens are gathered whole for it (once per worker; they stay whole), with the serial result.
TEST_F(PartitionedDocwordTest, ReadingAnotherDocumentsRowGathersTheTokens) {
  std::string log, serial;
  ASSERT_EQ(Run(0, 1, path_, "tokensnext", false, &log, &serial), 0) << log;
  ASSERT_NE(serial.find("next 0 "), std::string::npos) << serial.substr(0, 300);
  for (const auto& [workers, threads] : std::vector<std::pair<int, int>>{{2, 1}, {3, 2}}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + " threads " + std::to_string(threads));
    std::string split_log, split;
    ASSERT_EQ(Run(workers, threads, path_, "tokensnext", true, &split_log, &split), 0) << split_log;
    EXPECT_EQ(split, serial);
    const auto [relayouts, gathers] = Moves(split_log);
    EXPECT_EQ(relayouts, 0) << split_log;
    EXPECT_EQ(gathers, workers) << split_log;
  }
}

TEST_F(PartitionedDocwordTest, BadInputFailsEveryWorkerAsAWholeFileReadDoes) {
  auto write = [this](const std::string& name, const std::string& contents) {
    std::ofstream(dir_ + "/" + name) << contents;
    return dir_ + "/" + name;
  };
  std::string body, dup_body;
  int64_t bad_offset = -1, dup_offset = -1;
  for (int doc = 1; doc <= 60; ++doc) {
    for (int word = 1; word <= 20; ++word) {
      const std::string line = std::to_string(doc) + " " + std::to_string(word) + " 2\n";
      if (doc == 50 && word == 4) {
        bad_offset = static_cast<int64_t>(body.size());
        body += "50 four 2\n";
        dup_offset = static_cast<int64_t>(dup_body.size());
        dup_body += "3 4 2\n";  // (3, 4) again, in the last worker's range
        continue;
      }
      body += line;
      dup_body += line;
    }
  }
  const std::string header = "60\n20\n1200\n";
  const std::string bad = write("bad.txt", header + body);
  const std::string bad_where = bad + ":byte " + std::to_string(header.size() + bad_offset);
  ExpectEveryWorkerFails(2, bad, "InvalidArgument: " + bad_where + ": wordID 'four'");
  ExpectEveryWorkerFails(3, bad, "InvalidArgument: " + bad_where + ": wordID 'four'");

  const std::string dup = write("dup.txt", header + dup_body);
  const std::string dup_message = "InvalidArgument: " + dup + ":byte " +
                                  std::to_string(header.size() + dup_offset) +
                                  ": (docID 3, wordID 4) appears twice";
  ExpectEveryWorkerFails(2, dup, dup_message);
  ExpectEveryWorkerFails(3, dup, dup_message);
  // As tokens the entries travel without places and are merged by key on their holder.
  ExpectEveryWorkerFails(2, dup, dup_message, "tokens");
  ExpectEveryWorkerFails(4, dup, dup_message, "tokens");
  // The same message as with every entry on every worker.
  std::string log, digest;
  EXPECT_NE(Run(2, 1, dup, "bydoc", false, &log, &digest), 0);
  EXPECT_EQ(Count(log, "load failed: " + dup_message), 2) << log;

  std::string clean = dup_body;
  clean.replace(static_cast<size_t>(dup_offset), 6, "50 4 2\n");
  const std::string nnz = write("nnz.txt", "60\n20\n1201\n" + clean);
  ExpectEveryWorkerFails(3, nnz, "DataLoss: " + nnz + ": the header promises NNZ = 1201");
  ExpectEveryWorkerFails(3, nnz, "DataLoss: " + nnz + ": the header promises NNZ = 1201", "tokens");
  ExpectEveryWorkerFails(3, bad, "InvalidArgument: " + bad_where + ": wordID 'four'", "tokens");
  const std::string header_bad = write("header.txt", "60\nmany\n1200\n" + clean);
  ExpectEveryWorkerFails(2, header_bad, "InvalidArgument: " + header_bad + ":2: header line");
  ExpectEveryWorkerFails(2, dir_ + "/missing.txt", "NotFound: cannot open");
}

}  // namespace
