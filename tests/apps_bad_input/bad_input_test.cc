// mf and lda on bad input: a directory for a data file, a docword header claiming absurd sizes, a
// count of 2e9, a missing, short or directory --vocab, an unwritable --metrics. Each case exits 1
// with a message naming the file (and line) -- before training where it can be known then --
// never std::bad_alloc or an abort; under `tessera run -w 2` too.
#include <sys/stat.h>

#include "tests/launcher/tessera_harness.h"

namespace tessera::launcher::testing {
namespace {

class AppsBadInputTest : public TesseraHarness {
 protected:
  // Runs through env(1), so that any program can be started by the harness.
  AppsBadInputTest() : TesseraHarness("/usr/bin/env") {}

  void SetUp() override {
    TesseraHarness::SetUp();
    Write("ok.txt", "2\n3\n3\n1 1 2\n2 3 1\n2 2 1\n");
    Write("vocab.txt", "alpha\nbeta\ngamma\n");
    Write("ratings.txt", "1\t1\t5\n1\t2\t3\n2\t1\t4\n2\t2\t1\n");
  }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // The program exited 1 with `message` (and without aborting), and printed no progress line.
  void ExpectRejected(const RunResult& r, const std::string& message, const std::string& progress) {
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(Contains(r.err, message)) << message << "\n" << r.err;
    EXPECT_FALSE(Contains(r.err, "bad_alloc")) << r.err;
    if (!progress.empty()) {
      EXPECT_FALSE(Contains(r.out, progress)) << r.out;
    }
  }

  RunResult Lda(std::vector<std::string> args) {
    args.insert(args.begin(), TESSERA_LDA_BINARY);
    args.insert(args.end(), {"--iterations", "2", "--topics", "4"});
    return Run(args);
  }
  RunResult Mf(std::vector<std::string> args) {
    args.insert(args.begin(), TESSERA_MF_BINARY);
    args.insert(args.end(), {"--epochs", "2", "-k", "4"});
    return Run(args);
  }
  // `tessera run -w 2 -s 1 -- PROGRAM ARGS`.
  RunResult Launched(const std::string& program, std::vector<std::string> args) {
    std::vector<std::string> all = {
        TESSERA_LAUNCHER_BINARY, "run", "-w",   "2", "-s", "1", "--server-bin",
        TESSERA_SERVER_BINARY,   "--",  program};
    all.insert(all.end(), args.begin(), args.end());
    return Run(all);
  }
};

TEST_F(AppsBadInputTest, DirectoryAsDataFile) {
  ExpectRejected(Mf({"--train", dir_}), "'" + dir_ + "' is a directory, not a data file", "");
  ExpectRejected(Mf({"--train", Path("ratings.txt"), "--test", dir_}),
                 "'" + dir_ + "' is a directory", "epoch");
  ExpectRejected(Lda({"--docword", dir_}), "'" + dir_ + "' is a directory, not a data file", "");
}

TEST_F(AppsBadInputTest, DocwordHeaderClaimingTooManyEntries) {
  Write("huge_nnz.txt", "3\n5\n100000000000\n1 1 1\n");
  ExpectRejected(Lda({"--docword", Path("huge_nnz.txt")}),
                 Path("huge_nnz.txt") +
                     ": the header promises NNZ = 100000000000 entries, the file "
                     "has 1",
                 "iter");
}

TEST_F(AppsBadInputTest, DocwordHeaderClaimingTooManyDocuments) {
  Write("huge_d.txt", "100000000000\n3\n1\n1 1 1\n");
  ExpectRejected(Lda({"--docword", Path("huge_d.txt")}), "100000000000 documents", "iter");
  EXPECT_TRUE(Contains(Lda({"--docword", Path("huge_d.txt")}).err, Path("huge_d.txt")));
}

TEST_F(AppsBadInputTest, CountOfTwoBillion) {
  Write("big_count.txt", "2\n3\n2\n1 1 2000000000\n2 3 1\n");
  RunResult r = Lda({"--docword", Path("big_count.txt")});
  ExpectRejected(r, Path("big_count.txt") + ": its tokens need about", "iter");
  EXPECT_TRUE(Contains(r.err, "the largest, 2000000000, is docID 1 wordID 1")) << r.err;
}

TEST_F(AppsBadInputTest, VocabularyMissingShortOrADirectory) {
  ExpectRejected(Lda({"--docword", Path("ok.txt"), "--vocab", Path("nope.txt")}),
                 "the vocabulary --vocab: cannot open '" + Path("nope.txt") + "'", "iter");
  Write("short_vocab.txt", "alpha\nbeta\n");
  ExpectRejected(Lda({"--docword", Path("ok.txt"), "--vocab", Path("short_vocab.txt")}),
                 "--vocab '" + Path("short_vocab.txt") + "' has 2 lines, but " + Path("ok.txt") +
                     " has W = 3 words",
                 "iter");
  ExpectRejected(Lda({"--docword", Path("ok.txt"), "--vocab", dir_}),
                 "--vocab '" + dir_ + "' is a directory", "iter");
  // The good vocabulary passes, and prints topics.
  RunResult good = Lda({"--docword", Path("ok.txt"), "--vocab", Path("vocab.txt")});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_TRUE(Contains(good.out, "topic ")) << good.out;
}

TEST_F(AppsBadInputTest, UnwritableMetrics) {
  ExpectRejected(Mf({"--train", Path("ratings.txt"), "--metrics", Path("no/such/dir/m.jsonl")}),
                 "--metrics: NotFound: cannot open metrics file '" + Path("no/such/dir/m.jsonl"),
                 "epoch");
  ExpectRejected(Lda({"--docword", Path("ok.txt"), "--metrics", dir_}),
                 "cannot open metrics file '" + dir_ + "'", "iter");
  // A device that accepts the file but not its writes fails at the first epoch's line.
  struct stat st;
  if (stat("/dev/full", &st) == 0) {
    ExpectRejected(Mf({"--train", Path("ratings.txt"), "--metrics", "/dev/full"}),
                   "--metrics: DataLoss: cannot write metrics to '/dev/full'", "");
  }
}

// Checks made only on worker 0 (its --metrics, its --vocab) stop both workers at once: the job
// ends with exit 1 instead of worker 1 waiting for worker 0.
TEST_F(AppsBadInputTest, ChecksOnWorkerZeroStopTheWholeJob) {
  RunResult vocab = Launched(TESSERA_LDA_BINARY, {"--docword", Path("ok.txt"), "--iterations", "2",
                                                  "--topics", "4", "--vocab", Path("nope.txt")});
  EXPECT_EQ(vocab.exit_code, 1) << vocab.err;
  EXPECT_TRUE(Contains(vocab.err, "[worker 0] lda: NotFound: the vocabulary --vocab: cannot open"))
      << vocab.err;
  EXPECT_TRUE(Contains(vocab.err, "[worker 1] lda: another worker failed; stopping")) << vocab.err;
  EXPECT_LT(vocab.elapsed, seconds(20));

  struct stat st;
  if (stat("/dev/full", &st) == 0) {
    RunResult metrics = Launched(TESSERA_MF_BINARY, {"--train", Path("ratings.txt"), "--epochs",
                                                     "3", "-k", "4", "--metrics", "/dev/full"});
    EXPECT_EQ(metrics.exit_code, 1) << metrics.err;
    EXPECT_TRUE(Contains(metrics.err, "[worker 0] mf: --metrics: DataLoss")) << metrics.err;
    EXPECT_LT(metrics.elapsed, seconds(20));
  }
}

}  // namespace
}  // namespace tessera::launcher::testing
