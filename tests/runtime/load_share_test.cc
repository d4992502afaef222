// The split loaders (runtime/src/input/load_share.h): shares round-trip through their Cap'n
// Proto message, merge in rank order keeping the right error, worker ranges tile a file, and a
// load split over W simulated workers (threads joined by an in-memory all-gather) builds exactly
// the serial arrays on every worker -- or the same error on every worker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "input/load_share.h"
#include "tessera/tessera.h"
#include "tests/support/capnp_payloads.h"

namespace tessera::internal {
namespace {

namespace fs = std::filesystem;

TEST(LoadShareTest, RatingSharesRoundTripAndConcatenateInOrder) {
  RatingShare a;
  a.train = {{1, 10, 4.5}, {-3, 7, 1e-3}};
  a.test = {{2, 20, 3}};
  RatingShare b;
  b.train = {{9, 1, 2.25}};
  RatingShare merged;
  ASSERT_TRUE(MergeShare(EncodeShare(a), &merged).ok());
  ASSERT_TRUE(MergeShare(EncodeShare(b), &merged).ok());
  ASSERT_TRUE(merged.error.ok());
  ASSERT_EQ(merged.train.size(), 3u);
  EXPECT_EQ(merged.train[1].user, -3);
  EXPECT_EQ(merged.train[1].value, 1e-3);  // bit-exact: doubles travel as Float64
  EXPECT_EQ(merged.train[2].item, 1);
  ASSERT_EQ(merged.test.size(), 1u);
  EXPECT_EQ(merged.test[0].value, 3);
}

TEST(LoadShareTest, FirstRanksErrorWinsButATrainingErrorBeatsAHeldOutOne) {
  RatingShare ok;
  ok.train = {{1, 1, 1}};
  RatingShare test_error;
  test_error.error = Status::NotFound("test.txt: gone");
  test_error.error_in_test = true;
  RatingShare train_error;
  train_error.error = Status::InvalidArgument("train.txt:byte 40: bad");
  RatingShare later_train_error;
  later_train_error.error = Status::InvalidArgument("train.txt:byte 90: bad too");

  RatingShare merged;
  for (const RatingShare* s : {&ok, &test_error, &train_error, &later_train_error}) {
    ASSERT_TRUE(MergeShare(EncodeShare(*s), &merged).ok());
  }
  EXPECT_EQ(merged.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(merged.error.message(), "train.txt:byte 40: bad");
  EXPECT_FALSE(merged.error_in_test);

  RatingShare only_test;
  ASSERT_TRUE(MergeShare(EncodeShare(ok), &only_test).ok());
  ASSERT_TRUE(MergeShare(EncodeShare(test_error), &only_test).ok());
  EXPECT_EQ(only_test.error.code(), StatusCode::kNotFound);
  EXPECT_TRUE(only_test.error_in_test);
}

TEST(LoadShareTest, DocwordSharesKeepTheFirstErrorAndRejectOtherMessages) {
  DocwordShare a;
  a.entries = {{1, 2, 3}, {4, 5, 6}};
  DocwordShare bad;
  bad.error = Status::DataLoss("d.txt: short read");
  DocwordShare merged;
  ASSERT_TRUE(MergeShare(EncodeShare(a), &merged).ok());
  ASSERT_EQ(merged.entries.size(), 2u);
  EXPECT_EQ(merged.entries[1].count, 6);
  ASSERT_TRUE(MergeShare(EncodeShare(bad), &merged).ok());
  EXPECT_EQ(merged.error.code(), StatusCode::kDataLoss);
  EXPECT_EQ(merged.error.message(), "d.txt: short read");

  // A ratings share is not a docword share, and garbage is not a share.
  RatingShare r;
  EXPECT_EQ(MergeShare(EncodeShare(r), &merged).code(), StatusCode::kDataLoss);
  EXPECT_EQ(MergeShare("not a capnp message", &merged).code(), StatusCode::kDataLoss);
  EXPECT_EQ(MergeShare(std::string(64, '\xff'), &merged).code(), StatusCode::kDataLoss);
  EXPECT_EQ(MergeShare("", &merged).code(), StatusCode::kDataLoss);
}

// A share is read within a bound (exchange/capnp_util.h, PeerPayloadOptions): one whose training
// users claim far more to walk than it holds (pointer 1 of LoadedShare is triples.train, pointer
// 0 of RatingRecords its users) stops at the reader's traversal limit, and one whose list runs
// past its end at the bounds check; each a DataLoss, never an abort.
TEST(LoadShareTest, AnAmplifiedOrOversizedShareIsDataLoss) {
  RatingShare merged;
  Status amplified = MergeShare(testing::AmplifiedListPayload(1 << 28, {1, 0}), &merged);
  EXPECT_EQ(amplified.code(), StatusCode::kDataLoss);
  EXPECT_NE(amplified.message().find("traversal limit"), std::string::npos)
      << amplified.ToString();
  Status oversized = MergeShare(testing::OversizedListPayload(1 << 20, {1, 0}), &merged);
  EXPECT_EQ(oversized.code(), StatusCode::kDataLoss);
  EXPECT_NE(oversized.message().find("bounds"), std::string::npos) << oversized.ToString();
  EXPECT_TRUE(merged.train.empty());
}

TEST(LoadShareTest, MisalignedBytesAreCopiedNotMisread) {
  DocwordShare a;
  a.entries = {{7, 8, 9}};
  const std::string bytes = EncodeShare(a);
  std::string shifted = "x" + bytes;
  DocwordShare merged;
  ASSERT_TRUE(MergeShare(std::string_view(shifted).substr(1), &merged).ok());
  ASSERT_EQ(merged.entries.size(), 1u);
  EXPECT_EQ(merged.entries[0].word, 8);
}

TEST(LoadShareTest, WorkerRangesTileTheFile) {
  for (int64_t size : {0, 1, 2, 7, 100, 1000003}) {
    for (int w = 1; w <= 5; ++w) {
      int64_t at = 0;
      for (int r = 0; r < w; ++r) {
        const ReadRange range = WorkerRange(size, r, w);
        EXPECT_EQ(range.begin, at) << size << " " << r << "/" << w;
        if (r + 1 == w) {
          EXPECT_EQ(range.end, -1);
        } else {
          EXPECT_GE(range.end, range.begin);
          EXPECT_LE(range.end - range.begin, size / w + 1);
          at = range.end;
        }
      }
    }
  }
}

// An all-gather among `n` threads in memory (one use).
class InMemoryGather {
 public:
  explicit InMemoryGather(int n) : parts_(static_cast<size_t>(n)) {}
  Result<std::vector<std::string>> Gather(int rank, std::string bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    parts_[static_cast<size_t>(rank)] = std::move(bytes);
    if (++arrived_ == static_cast<int>(parts_.size())) done_.notify_all();
    done_.wait(lock, [this] { return arrived_ == static_cast<int>(parts_.size()); });
    ++calls_;
    return parts_;
  }
  int calls() const { return calls_; }

 private:
  std::mutex mu_;
  std::condition_variable done_;
  std::vector<std::string> parts_;
  int arrived_ = 0;
  int calls_ = 0;
};

ContextOptions Hermetic() {
  ContextOptions o;
  o.read_environment = false;
  return o;
}

template <typename T>
std::string Digest(const DistArray<T, 2>& a) {
  std::ostringstream s;
  s << a.extent(0) << "x" << a.extent(1) << " nnz " << a.nnz() << ":";
  for (int64_t p = 0; p < a.nnz(); ++p) {
    s << " " << a.key_at(p)[0] << "," << a.key_at(p)[1] << "=" << a.value_at(p);
  }
  return s.str();
}

std::string Digest(const Result<TripleData<double>>& d) {
  if (!d.ok()) return d.status().ToString();
  std::ostringstream s;
  s << "train " << Digest(d->train) << "\ntest " << Digest(d->test) << "\nusers";
  for (int64_t i = 0; i < d->users.size(); ++i) s << " " << d->users.external(i);
  s << "\nitems";
  for (int64_t i = 0; i < d->items.size(); ++i) s << " " << d->items.external(i);
  return s.str();
}

std::string Digest(const Result<Corpus>& c) {
  if (!c.ok()) return c.status().ToString();
  std::ostringstream s;
  s << c->num_docs << " " << c->vocab_size << " " << c->num_tokens << " " << Digest(c->counts);
  return s.str();
}

class SplitLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_split_load_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& contents) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }

  // Runs `load(ctx, split)` on `n` threads, each a worker with its own Context, joined by one
  // in-memory all-gather; returns every worker's digest.
  template <typename Load>
  std::vector<std::string> RunSplit(int n, Load load) {
    InMemoryGather gather(n);
    std::vector<std::unique_ptr<Context>> contexts;
    for (int r = 0; r < n; ++r) contexts.push_back(std::make_unique<Context>(Hermetic()));
    std::vector<std::string> digests(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        LoadSplit split;
        split.rank = r;
        split.num_workers = n;
        split.gather = [&gather, r](std::string bytes) { return gather.Gather(r, std::move(bytes)); };
        digests[static_cast<size_t>(r)] = Digest(load(*contexts[static_cast<size_t>(r)], &split));
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(gather.calls(), n) << "every worker takes part in the one all-gather";
    return digests;
  }

  // Every split of `n` = 1..5 workers gives the serial result on every worker.
  template <typename Load>
  void ExpectSplitsEqualSerial(Load load, const std::string& must_contain) {
    Context serial_ctx(Hermetic());
    const std::string serial = Digest(load(serial_ctx, nullptr));
    EXPECT_NE(serial.find(must_contain), std::string::npos) << serial;
    for (int n = 1; n <= 5; ++n) {
      const std::vector<std::string> digests = RunSplit(n, load);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(digests[static_cast<size_t>(r)], serial) << "worker " << r << " of " << n;
      }
    }
  }

  fs::path dir_;
};

std::string RatingsFile(const std::string& sep, int lines) {
  std::string s;
  for (int i = 0; i < lines; ++i) {
    s += std::to_string(1000 - i * 37 % 101) + sep + std::to_string(i * 13 % 257) + sep +
         std::to_string(1 + i % 5) + "." + std::to_string(i % 10) + "\n";
    if (i % 23 == 0) s += "\n";
  }
  return s;
}

TEST_F(SplitLoadTest, TriplesInEveryFormatWithTestFileOrFractionEqualSerial) {
  const std::string tab = Write("tab", RatingsFile("\t", 300));
  const std::string csv = Write("csv", "userId,movieId,rating,timestamp\n" + RatingsFile(",", 200));
  const std::string colons = Write("colons", RatingsFile("::", 150));
  const std::string held_out = Write("held_out", "5\t99999\t2\n1000\t3\t5\n");
  for (const std::string& path : {tab, csv, colons}) {
    SCOPED_TRACE(path);
    ExpectSplitsEqualSerial(
        [&](Context& ctx, const LoadSplit* split) {
          return LoadTriples<double>(ctx, path, TripleOptions{}, split);
        },
        "train ");
  }
  TripleOptions with_test;
  with_test.test_path = held_out;
  ExpectSplitsEqualSerial(
      [&](Context& ctx, const LoadSplit* split) {
        return LoadTriples<double>(ctx, tab, with_test, split);
      },
      "99999");
  TripleOptions fraction;
  fraction.test_fraction = 0.3;
  ExpectSplitsEqualSerial(
      [&](Context& ctx, const LoadSplit* split) {
        return LoadTriples<double>(ctx, csv, fraction, split);
      },
      "train ");
}

TEST_F(SplitLoadTest, BadTriplesGiveEveryWorkerTheSameError) {
  std::string contents = RatingsFile("\t", 100);
  const size_t cut = contents.size() * 3 / 4;
  const size_t line = contents.find('\n', cut) + 1;
  contents.insert(line, "1\t2\n");  // two fields, in the last worker's range
  const std::string bad = Write("bad", contents);
  const std::string where = bad + ":byte " + std::to_string(line) + ": expected 3 or 4";
  for (int n : {2, 3}) {
    const std::vector<std::string> digests = RunSplit(n, [&](Context& ctx, const LoadSplit* split) {
      return LoadTriples<double>(ctx, bad, TripleOptions{}, split);
    });
    for (const std::string& d : digests) {
      EXPECT_NE(d.find("InvalidArgument: " + where), std::string::npos) << d;
    }
  }
  // A good training file whose held-out file has an error in worker 0's range, with a training
  // error elsewhere: the training file's error wins, as in a serial read.
  const std::string good = Write("good", RatingsFile("\t", 100));
  const std::string bad_test = Write("bad_test", "1\tx\t3\n" + RatingsFile("\t", 100));
  TripleOptions o;
  o.test_path = bad_test;
  for (const std::string& d : RunSplit(3, [&](Context& ctx, const LoadSplit* split) {
         return LoadTriples<double>(ctx, good, o, split);
       })) {
    EXPECT_NE(d.find(bad_test + ":1: item id 'x'"), std::string::npos) << d;
  }
  o.test_path = bad_test;
  for (const std::string& d : RunSplit(3, [&](Context& ctx, const LoadSplit* split) {
         return LoadTriples<double>(ctx, bad, o, split);
       })) {
    EXPECT_NE(d.find(where), std::string::npos) << d;
  }
  // An empty file: "no ratings" on every worker (each one's share is empty, not an error).
  const std::string empty = Write("empty", "\n\n");
  for (const std::string& d : RunSplit(2, [&](Context& ctx, const LoadSplit* split) {
         return LoadTriples<double>(ctx, empty, TripleOptions{}, split);
       })) {
    EXPECT_NE(d.find("no ratings"), std::string::npos) << d;
  }
}

TEST_F(SplitLoadTest, DocwordEqualsSerialAndFailsAlikeEverywhere) {
  std::string entries;
  int nnz = 0;
  for (int d = 1; d <= 30; ++d) {
    for (int w = d % 4 + 1; w <= 40; w += 3) {
      entries += std::to_string(d) + " " + std::to_string(w) + " " + std::to_string(d % 5 + 1) + "\n";
      ++nnz;
    }
  }
  const std::string path = Write("docword", "30\n40\n" + std::to_string(nnz) + "\n" + entries);
  ExpectSplitsEqualSerial(
      [&](Context& ctx, const LoadSplit* split) {
        return LoadDocword(ctx, path, DocwordOptions{}, split);
      },
      "30 40 ");
  DocwordOptions prefix;
  prefix.max_docs = 11;
  ExpectSplitsEqualSerial(
      [&](Context& ctx, const LoadSplit* split) { return LoadDocword(ctx, path, prefix, split); },
      "11 40 ");

  // A tiny file: most workers' ranges hold only header bytes.
  const std::string tiny = Write("tiny", "2\n2\n2\n1 1 1\n2 2 5\n");
  ExpectSplitsEqualSerial(
      [&](Context& ctx, const LoadSplit* split) {
        return LoadDocword(ctx, tiny, DocwordOptions{}, split);
      },
      "2 2 6 ");

  // Errors: a duplicate spanning workers (named at the second line, by line number when it is in
  // worker 0's range, which starts at the first entry line), a wrong NNZ, a bad header.
  const std::string dup = Write("dup", "3\n3\n4\n1 1 1\n1 1 2\n2 2 1\n3 3 1\n");
  const std::string nnz_file = Write("nnz", "3\n3\n5\n1 1 1\n2 2 1\n3 3 1\n");
  const std::string header = Write("header", "3\nthree\n5\n1 1 1\n");
  struct Case {
    std::string path;
    std::string serial;  // the serial error
    std::string tail;    // after the location
  };
  for (const Case& c :
       {Case{dup, "InvalidArgument: " + dup + ":5: (docID 1, wordID 1) appears twice",
             ": (docID 1, wordID 1) appears twice"},
        Case{nnz_file, "DataLoss: " + nnz_file + ": the header promises NNZ = 5 entries, the file has 3",
             ": the header promises NNZ = 5 entries, the file has 3"},
        Case{header, "InvalidArgument: " + header + ":2: header line should be W (vocabulary size), a positive integer; found 'three'",
             ":2: header line should be W"}}) {
    SCOPED_TRACE(c.path);
    Context serial_ctx(Hermetic());
    EXPECT_EQ(Digest(LoadDocword(serial_ctx, c.path, DocwordOptions{}, nullptr)), c.serial);
    const std::string code = c.serial.substr(0, c.serial.find(':'));
    for (int n : {2, 3}) {
      const std::vector<std::string> digests =
          RunSplit(n, [&](Context& ctx, const LoadSplit* split) {
            return LoadDocword(ctx, c.path, DocwordOptions{}, split);
          });
      for (const std::string& d : digests) {
        EXPECT_EQ(d, digests[0]) << "every worker returns the same error";
        EXPECT_EQ(d.rfind(code + ": " + c.path, 0), 0u) << d;
        EXPECT_NE(d.find(c.tail), std::string::npos) << d;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::internal
