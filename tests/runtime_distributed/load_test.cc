// Distributed data loading end to end: load_check loads a file alone (the serial reference) and
// under `tessera run -w W` (real coordinator, server and worker processes over tcp loopback),
// where every worker parses only its byte range and the records are all-gathered. Every worker
// must build exactly the serial arrays, and bad input in any worker's range must make every
// worker fail, quickly, with the same "file:byte offset" error.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "job_test_base.h"

namespace {

namespace fs = std::filesystem;

// "" when equal; else where two digests first differ. (EXPECT_EQ on the digests themselves would
// have GoogleTest diff two 80000-line strings, quadratically.)
std::string FirstDifference(const std::string& got, const std::string& want) {
  if (got == want) return "";
  std::istringstream g(got), w(want);
  std::string gl, wl;
  for (int line = 1;; ++line) {
    const bool more_g = static_cast<bool>(std::getline(g, gl));
    const bool more_w = static_cast<bool>(std::getline(w, wl));
    if (!more_g || !more_w || gl != wl) {
      return "line " + std::to_string(line) + ": got '" + (more_g ? gl : "<end>") + "', want '" +
             (more_w ? wl : "<end>") + "'";
    }
  }
}

class DistributedLoadTest : public tessera::testing::JobTest {
 protected:
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }

  // load_check alone; returns its digest.
  std::string Serial(const std::vector<std::string>& load_args) {
    std::vector<std::string> args = {LOAD_CHECK_BINARY, dir_ + "/serial"};
    args.insert(args.end(), load_args.begin(), load_args.end());
    EXPECT_EQ(RunProcess("serial", args), 0) << Read(dir_ + "/log.serial");
    EXPECT_NE(Read(dir_ + "/log.serial").find("mode serial"), std::string::npos);
    return Read(dir_ + "/serial.0");
  }

  // `tessera run -w workers -s 1 -- load_check ...`; returns the exit code, the output in *log.
  int Distributed(int workers, const std::vector<std::string>& load_args, std::string* log) {
    const std::string name = "w" + std::to_string(workers);
    std::vector<std::string> args = {TESSERA_LAUNCHER_BINARY, "run", "-w", std::to_string(workers),
                                     "-s", "1", "--", LOAD_CHECK_BINARY, dir_ + "/" + name};
    args.insert(args.end(), load_args.begin(), load_args.end());
    const int rc = RunProcess(name, args);
    *log = Read(dir_ + "/log." + name);
    return rc;
  }

  // Every worker's digest equals `expected`, and every worker parsed a proper part of the records
  // (the parts adding up to the whole): the file was split, not read whole by each.
  void ExpectDistributedEquals(const std::string& expected, int workers,
                               const std::vector<std::string>& load_args) {
    std::string log;
    ASSERT_EQ(Distributed(workers, load_args, &log), 0) << log;
    EXPECT_NE(log.find("mode distributed workers " + std::to_string(workers)), std::string::npos)
        << log;
    for (int r = 0; r < workers; ++r) {
      EXPECT_EQ(FirstDifference(Read(dir_ + "/w" + std::to_string(workers) + "." + std::to_string(r)),
                                expected),
                "")
          << "worker " << r << " of " << workers << "\n" << log;
    }
    const std::regex parsed(R"(loaded \S+: (\d+) of (\d+) records parsed by this worker)");
    int64_t sum = 0, total = -1;
    int lines = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), parsed); it != std::sregex_iterator();
         ++it) {
      const int64_t mine = std::stoll((*it)[1]), all = std::stoll((*it)[2]);
      EXPECT_GT(mine, 0) << "a worker parsed nothing\n" << log;
      EXPECT_LT(mine, all) << "a worker parsed the whole file\n" << log;
      if (total >= 0) {
        EXPECT_EQ(all, total);
      }
      total = all;
      sum += mine;
      ++lines;
    }
    EXPECT_EQ(lines, workers) << log;
    EXPECT_EQ(sum, total) << "the workers' parts add up to the whole\n" << log;
  }

  // Under `tessera run -w workers`, loading fails on every worker with `message`, quickly.
  void ExpectEveryWorkerFails(int workers, const std::vector<std::string>& load_args,
                              const std::string& message) {
    const auto start = std::chrono::steady_clock::now();
    std::string log;
    EXPECT_NE(Distributed(workers, load_args, &log), 0) << log;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 30) << "the failing job took too long to stop\n" << log;
    size_t count = 0;
    for (size_t at = log.find("load failed: " + message); at != std::string::npos;
         at = log.find("load failed: " + message, at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, static_cast<size_t>(workers))
        << "every worker reports the error '" << message << "'\n" << log;
    EXPECT_EQ(log.find("load seconds"), std::string::npos) << "a worker went on alone\n" << log;
  }
};

TEST_F(DistributedLoadTest, MovieLensU1IsTheSameOnEveryWorker) {
  const fs::path data = fs::path(TESSERA_SHARED_DATA_DIR) / "ml-100k";
  if (!fs::exists(data / "u1.base") || !fs::exists(data / "u1.test")) {
    GTEST_SKIP() << "MovieLens 100k not found at " << data << " (the shared data directory)";
  }
  const std::vector<std::string> args = {"triples", (data / "u1.base").string(),
                                         (data / "u1.test").string()};
  const std::string serial = Serial(args);
  ASSERT_NE(serial.find("train shape 943 1682 nnz 80000\n"), std::string::npos)
      << serial.substr(0, 200);
  ASSERT_NE(serial.find("test shape 943 1682 nnz 20000\n"), std::string::npos);
  ExpectDistributedEquals(serial, 2, args);
  ExpectDistributedEquals(serial, 3, args);
}

// A docword corpus with blank lines and documents past max_docs.
std::string MakeDocword() {
  std::string entries;
  int64_t nnz = 0;
  uint64_t state = 12345;
  for (int doc = 1; doc <= 80; ++doc) {
    for (int word = 1; word <= 150; ++word) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      if ((state >> 33) % 7 != 0) continue;
      entries += std::to_string(doc) + " " + std::to_string(word) + " " +
                 std::to_string(1 + (state >> 40) % 9) + "\n";
      ++nnz;
    }
    if (doc % 17 == 0) entries += "\n";
  }
  return "80\n150\n" + std::to_string(nnz) + "\n" + entries;
}

TEST_F(DistributedLoadTest, DocwordIsTheSameOnEveryWorker) {
  const std::string path = Write("docword.txt", MakeDocword());
  const std::string serial = Serial({"docword", path});
  ASSERT_NE(serial.find("docs 80 vocab 150"), std::string::npos) << serial.substr(0, 200);
  ExpectDistributedEquals(serial, 2, {"docword", path});
  ExpectDistributedEquals(serial, 3, {"docword", path});
  const std::string prefix = Serial({"docword", path, "30"});
  ASSERT_NE(prefix.find("docs 30 vocab 150"), std::string::npos);
  ExpectDistributedEquals(prefix, 2, {"docword", path, "30"});
}

// Ratings with one malformed line at about 70% of the file: in worker 1's range of 2, and in
// worker 2's of 3.
TEST_F(DistributedLoadTest, MalformedLineFailsEveryWorkerWithItsByteOffset) {
  std::string contents;
  int64_t bad_offset = -1;
  for (int i = 0; i < 1000; ++i) {
    if (i == 700) {
      bad_offset = static_cast<int64_t>(contents.size());
      contents += "12\tseven\t3\n";
      continue;
    }
    contents += std::to_string(i % 97) + "\t" + std::to_string(i) + "\t4\n";
  }
  const std::string path = Write("ratings.tsv", contents);
  // Serially it is the same error, located by line.
  std::vector<std::string> args = {LOAD_CHECK_BINARY, dir_ + "/serial", "triples", path};
  EXPECT_EQ(RunProcess("serial", args), 1);
  EXPECT_NE(Read(dir_ + "/log.serial").find(path + ":701: item id 'seven' is not an integer"),
            std::string::npos)
      << Read(dir_ + "/log.serial");
  const std::string where = path + ":byte " + std::to_string(bad_offset);
  ExpectEveryWorkerFails(2, {"triples", path}, "InvalidArgument: " + where + ": item id 'seven'");
  ExpectEveryWorkerFails(3, {"triples", path}, "InvalidArgument: " + where + ": item id 'seven'");
}

// Whole-file checks run on the gathered records: a duplicate whose two occurrences are in
// different workers' ranges, and an entry count that differs from the header's NNZ.
TEST_F(DistributedLoadTest, WholeFileDocwordChecksFailEveryWorker) {
  int64_t second_offset = -1;  // in `entries`
  std::string entries, clean;  // with and without the duplicate
  for (int doc = 1; doc <= 50; ++doc) {
    for (int word = 1; word <= 20; ++word) {
      const std::string line = std::to_string(doc) + " " + std::to_string(word) + " 1\n";
      clean += line;
      if (doc == 45 && word == 3) {  // (2, 3) again, late in the file
        second_offset = static_cast<int64_t>(entries.size());
        entries += "2 3 1\n";
        continue;
      }
      entries += line;
    }
  }
  const std::string header = "50\n20\n1000\n";
  const std::string dup = Write("dup.txt", header + entries);
  const std::string where =
      dup + ":byte " + std::to_string(static_cast<int64_t>(header.size()) + second_offset);
  ExpectEveryWorkerFails(2, {"docword", dup},
                         "InvalidArgument: " + where + ": (docID 2, wordID 3) appears twice");

  const std::string short_nnz = Write("nnz.txt", "50\n20\n1001\n" + clean);
  ExpectEveryWorkerFails(3, {"docword", short_nnz},
                         "DataLoss: " + short_nnz + ": the header promises NNZ = 1001");
  // A missing file: every worker fails the same way too.
  ExpectEveryWorkerFails(2, {"docword", dir_ + "/missing.txt"}, "NotFound: cannot open");
}

}  // namespace
