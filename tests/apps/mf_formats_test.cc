// mf on the formats people have: string ids (Amazon/Yelp style) trained, saved with their strings
// and matched as written by --predict and --recommend, serially and from a two-worker job; the
// Netflix prize format; and a clear error for each kind of bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"

namespace {

namespace fs = std::filesystem;

using tessera::testing::RunCommand;
using tessera::testing::RunResult;

class MfFormatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_mf_formats_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Mf() { return std::string(TESSERA_APPS_BIN_DIR) + "/mf"; }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
    return Path(name);
  }
  static std::vector<std::string> Lines(const std::string& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  static std::vector<std::string> Fields(const std::string& line) {
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string x; std::getline(s, x, '\t');) f.push_back(x);
    return f;
  }

  // Ratings of users "U-a".."U-?" (and "007") for items "sku:1".."sku:15", as CSV.
  std::string StringIdRatings(std::set<std::string>* users, std::set<std::string>* items) const {
    std::string text = "user,item,rating\n";
    for (int u = 0; u < 25; ++u) {
      const std::string user = u == 0 ? "007" : "U-" + std::string(1, static_cast<char>('a' + u));
      for (int i = u % 3; i < 15; i += 2) {
        const std::string item = "sku:" + std::to_string(i + 1);
        text += user + "," + item + "," + std::to_string(1 + (u * 7 + i) % 5) + ".0\n";
        users->insert(user);
        items->insert(item);
      }
    }
    return Write("ratings.csv", text);
  }

  // Trains on string ids into `model`, then checks the id files, predictions and
  // recommendations name the ids exactly as the ratings file spells them.
  void CheckStringIdModel(const std::string& train_command, const std::string& model,
                          const std::set<std::string>& users, const std::set<std::string>& items) {
    RunResult r = RunCommand(train_command);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> user_lines = Lines(model + "/users.txt");
    std::vector<std::string> item_lines = Lines(model + "/items.txt");
    EXPECT_EQ(std::set<std::string>(user_lines.begin(), user_lines.end()), users);
    EXPECT_EQ(user_lines.size(), users.size());
    EXPECT_EQ(std::set<std::string>(item_lines.begin(), item_lines.end()), items);

    Write("pairs.txt", "007,sku:3\nU-b,sku:2\nnobody,sku:1\n");
    r = RunCommand(Mf() + " --load-model " + model + " --predict " + Path("pairs.txt") + " --out " +
                   Path("predictions.tsv") + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> predictions = Lines(Path("predictions.tsv"));
    ASSERT_EQ(predictions.size(), 3u);
    std::vector<std::string> first = Fields(predictions[0]);
    ASSERT_EQ(first.size(), 3u) << predictions[0];
    EXPECT_EQ(first[0], "007");  // as written, not the integer 7
    EXPECT_EQ(first[1], "sku:3");
    EXPECT_TRUE(std::isfinite(std::strtod(first[2].c_str(), nullptr)));

    r = RunCommand(Mf() + " --load-model " + model + " --recommend 2 --out " + Path("top.tsv") +
                   " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> top = Lines(Path("top.tsv"));
    EXPECT_EQ(top.size(), 2 * users.size());
    for (const std::string& line : top) {
      std::vector<std::string> f = Fields(line);
      ASSERT_EQ(f.size(), 3u) << line;
      EXPECT_TRUE(users.count(f[0])) << line;
      EXPECT_TRUE(items.count(f[1])) << line;
    }
  }

  fs::path dir_;
};

TEST_F(MfFormatsTest, StringIdsAreSavedAndMatchedAsWritten) {
  std::set<std::string> users, items;
  const std::string ratings = StringIdRatings(&users, &items);
  const std::string model = Path("model");
  CheckStringIdModel(Mf() + " --train " + ratings + " --string-ids -k 4 --epochs 3 --save-model " +
                         model + " 2>&1",
                     model, users, items);
}

#ifdef TESSERA_LAUNCHER_BINARY
TEST_F(MfFormatsTest, StringIdsFromATwoWorkerJob) {
  std::set<std::string> users, items;
  const std::string ratings = StringIdRatings(&users, &items);
  const std::string model = Path("model");
  CheckStringIdModel(std::string(TESSERA_LAUNCHER_BINARY) + " run -w 2 -s 1 -- " + Mf() +
                         " --train " + ratings + " --string-ids -k 4 --epochs 3 --save-model " +
                         model + " 2>&1",
                     model, users, items);
}
#endif

// Two different id strings with one 63-bit key would be merged into one user; mf stops before
// training, naming both. The pair was found by a Pollard-rho (Brent) collision search over
// tessera::string_id_key of 16-hex-digit strings (about 2^32 evaluations); both keys are
// 1797490740396203088.
constexpr const char* kCollidingA = "3865367f444cb8c5";
constexpr const char* kCollidingB = "35a3f0b26dd252ba";

TEST_F(MfFormatsTest, StringIdsThatShareAKeyStopBeforeTraining) {
  std::string text = "user,item,rating\n";
  for (int i = 0; i < 6; ++i) {
    text += std::string(kCollidingA) + ",item" + std::to_string(i) + ",4\n";
    text += "other" + std::to_string(i) + ",item" + std::to_string(i) + ",3\n";
  }
  text += std::string(kCollidingB) + ",item9,1\n";
  const std::string ratings = Write("colliding.csv", text);
  const std::string expected =
      std::string("user ids '") + kCollidingA + "' and '" + kCollidingB + "' have the same key";
  RunResult r = RunCommand(Mf() + " --train " + ratings + " --string-ids -k 2 --epochs 5 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("colliding.csv:14: " + expected), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("epoch"), std::string::npos) << "trained despite the collision";
#ifdef TESSERA_LAUNCHER_BINARY
  // Worker 0 finds it; every worker stops.
  r = RunCommand(std::string(TESSERA_LAUNCHER_BINARY) + " run -w 2 -s 1 -- " + Mf() + " --train " +
                 ratings + " --string-ids -k 2 --epochs 5 2>&1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("[worker 0] mf: InvalidArgument: " + std::string(ratings) + ":14: " + expected),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[worker 1] mf: another worker failed; stopping"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("epoch"), std::string::npos) << r.output;
#endif
}

TEST_F(MfFormatsTest, StringIdsWithoutTheFlagSayWhatToPass) {
  std::set<std::string> users, items;
  RunResult r =
      RunCommand(Mf() + " --train " + StringIdRatings(&users, &items) + " --epochs 1 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("ratings.csv:2: item id 'sku:1' is not an integer (for ids that are "
                          "strings, load with string ids: mf --string-ids)"),
            std::string::npos)
      << r.output;
}

TEST_F(MfFormatsTest, NetflixPrizeFormatTrains) {
  std::string text;
  for (int movie = 1; movie <= 12; ++movie) {
    text += std::to_string(movie) + ":\n";
    for (int user = movie % 4; user < 40; user += 3) {
      text += std::to_string(1000 + user) + "," + std::to_string(1 + (movie + user) % 5) +
              ",2005-0" + std::to_string(1 + movie % 9) + "-1" + std::to_string(user % 10) + "\n";
    }
  }
  const std::string path = Write("combined_data_1.txt", text);
  RunResult r = RunCommand(Mf() + " --train " + path + " -k 4 --epochs 2 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("mf: 40 users, 12 items"), std::string::npos) << r.output;
  r = RunCommand(Mf() + " --train " + path + " --format netflix -k 4 --epochs 1 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Malformed: a rating line with a fourth field, named by file and line.
  const std::string bad = Write("bad_netflix.txt", "1:\n1000,3,2005-01-01\n1001,4,2005-01-01,x\n");
  r = RunCommand(Mf() + " --train " + bad + " --epochs 1 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad_netflix.txt:3: expected 'user,rating[,date]'"), std::string::npos)
      << r.output;
  r = RunCommand(Mf() + " --train " + path + " --format netflx --epochs 1 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--format"), std::string::npos) << r.output;
}

// A model trained on Netflix files reads Netflix files back: held-out ratings (--test), the
// qualifying file's "user,date" pairs (--predict), the training file, gzip-compressed, as pairs not
// to recommend (--exclude).
TEST_F(MfFormatsTest, NetflixFilesWorkWithASavedModel) {
  std::string train, probe = "3:\n", qualifying = "2:\n1001,2005-09-01\n7:\n1003,2005-09-02\n";
  int train_ratings = 0;
  for (int movie = 1; movie <= 8; ++movie) {
    train += std::to_string(movie) + ":\n";
    for (int user = movie % 2; user < 10; user += 2) {
      train += std::to_string(1000 + user) + "," + std::to_string(1 + (movie + user) % 5) +
               ",2005-01-01\n";
      ++train_ratings;
    }
  }
  probe += "1002,4\n1004,2,2005-02-02\n";
  const std::string train_path = Write("combined_data_1.txt", train);
  const std::string model = Path("model");
  RunResult r = RunCommand(Mf() + " --train " + train_path + " -k 3 --epochs 2 --save-model " +
                           model + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = RunCommand(Mf() + " --load-model " + model + " --test " + Write("probe.txt", probe) +
                 " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("over 2 ratings (0 of an unknown user, 0 of an unknown item)"),
            std::string::npos)
      << r.output;

  r = RunCommand(Mf() + " --load-model " + model + " --predict " +
                 Write("qualifying.txt", qualifying) + " --out " + Path("pred.tsv") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> predictions = Lines(Path("pred.tsv"));
  ASSERT_EQ(predictions.size(), 2u);
  EXPECT_EQ(Fields(predictions[0])[0] + " " + Fields(predictions[0])[1], "1001 2");
  EXPECT_EQ(Fields(predictions[1])[0] + " " + Fields(predictions[1])[1], "1003 7");

  // Every item of the model is rated by half the users: excluding the training pairs leaves
  // each user exactly the movies of the other parity.
  r = RunCommand("gzip -c " + train_path + " > " + Path("train.gz"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Mf() + " --load-model " + model + " --recommend 8 --exclude " + Path("train.gz") +
                 " --out " + Path("top.tsv") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> top = Lines(Path("top.tsv"));
  EXPECT_EQ(static_cast<int>(top.size()), 10 * 8 - train_ratings);
  for (const std::string& line : top) {
    const std::vector<std::string> f = Fields(line);
    ASSERT_EQ(f.size(), 3u) << line;
    const int user = std::atoi(f[0].c_str()) - 1000, movie = std::atoi(f[1].c_str());
    EXPECT_NE(user % 2, movie % 2) << "a training pair was recommended: " << line;
  }

  // Bad input, named by file and line: a rating line before any movie line, a rating that is no
  // number, and a file of another format read as Netflix.
  r = RunCommand(Mf() + " --load-model " + model + " --test " + Write("bad1.txt", "1:\n1002,x\n") +
                 " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad1.txt:2: rating 'x' is not a finite number"), std::string::npos)
      << r.output;
  r = RunCommand(Mf() + " --load-model " + model + " --format netflix --predict " +
                 Write("bad2.txt", "1002,2005-01-01\n") + " --out " + Path("o.tsv") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad2.txt:1: a Netflix-format file starts with a 'MOVIE_ID:' line"),
            std::string::npos)
      << r.output;
  r = RunCommand(Mf() + " --load-model " + model + " --test " +
                 Write("bad3.txt", "4:\n1002,3,2005-01-01,extra\n") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad3.txt:2: expected 'user,rating[,date]'"), std::string::npos)
      << r.output;
  // A damaged gzip file.
  r = RunCommand("head -c 40 " + Path("train.gz") + " > " + Path("cut.gz"));
  ASSERT_EQ(r.exit_code, 0);
  r = RunCommand(Mf() + " --load-model " + model + " --recommend 1 --exclude " + Path("cut.gz") +
                 " --out " + Path("o.tsv") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("cut.gz"), std::string::npos) << r.output;
}

}  // namespace
