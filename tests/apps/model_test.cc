// Trained models out and back in: mf --save-model / --load-model (evaluate, predict, recommend),
// serially and from a two-worker job whose parameters stay partitioned between loops, and every
// kind of bad model path failing before any training.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"

namespace {

namespace fs = std::filesystem;

using tessera::testing::RunCommand;
using tessera::testing::RunResult;

class ModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_model_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Bin(const std::string& name) {
    return std::string(TESSERA_APPS_BIN_DIR) + "/" + name;
  }
  static std::string Data(const std::string& rel) {
    return std::string(TESSERA_DATA_DIR) + "/" + rel;
  }
  static bool HaveMovieLens() {
    return fs::exists(Data("ml-100k/u1.base")) && fs::exists(Data("ml-100k/u1.test"));
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
  }
  // The last "test_rmse X" in `output`, or NaN.
  static double LastTestRmse(const std::string& output) {
    const size_t at = output.rfind("test_rmse ");
    return at == std::string::npos ? NAN : std::strtod(output.c_str() + at + 10, nullptr);
  }
  static std::vector<std::vector<std::string>> ReadTsv(const std::string& path) {
    std::vector<std::vector<std::string>> rows;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f;
      std::stringstream s(line);
      for (std::string x; std::getline(s, x, '\t');) f.push_back(x);
      rows.push_back(f);
    }
    return rows;
  }

  fs::path dir_;
};

// The saved model predicts what the trained one did: the RMSE mf prints after loading equals the
// last epoch's, and the predictions and recommendations agree with it.
TEST_F(ModelTest, MfSavesAModelThatEvaluatesPredictsAndRecommends) {
  if (!HaveMovieLens()) GTEST_SKIP() << "no MovieLens data at " << Data("ml-100k");
  const std::string model = Path("model");
  RunResult r = RunCommand(Bin("mf") + " --train " + Data("ml-100k/u1.base") + " --test " +
                           Data("ml-100k/u1.test") + " -k 8 --epochs 3 --save-model " + model +
                           " --model-text");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double trained = LastTestRmse(r.output);
  ASSERT_TRUE(std::isfinite(trained)) << r.output;
  for (const char* f : {"model.json", "W.tarr", "H.tarr", "user_bias.tarr", "item_bias.tarr",
                        "users.txt", "items.txt", "W.txt", "H.txt"}) {
    EXPECT_TRUE(fs::exists(fs::path(model) / f)) << f;
  }
  std::ifstream json_in(fs::path(model) / "model.json");
  const nlohmann::json j = nlohmann::json::parse(json_in);
  EXPECT_EQ(j["k"], 8);
  EXPECT_EQ(j["users"], 943);
  EXPECT_EQ(j["items"], 1682);

  r = RunCommand(Bin("mf") + " --load-model " + model + " --test " + Data("ml-100k/u1.test"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NEAR(LastTestRmse(r.output), trained, 1e-4) << r.output;
  EXPECT_NE(r.output.find("over 20000 ratings (0 of an unknown user, 0 of an unknown item)"),
            std::string::npos)
      << r.output;

  // Predictions of the test pairs (ratings dropped), one line each, give the same RMSE; an
  // unknown user gets the global mean plus the item's bias.
  std::ifstream test(Data("ml-100k/u1.test"));
  std::ofstream pairs(Path("pairs.txt"));
  std::vector<double> ratings;
  for (std::string line; std::getline(test, line);) {
    std::stringstream s(line);
    std::string u, i;
    double rating;
    s >> u >> i >> rating;
    pairs << u << ' ' << i << '\n';
    ratings.push_back(rating);
  }
  pairs << "no-such-user 1\n";
  pairs.close();
  r = RunCommand(Bin("mf") + " --load-model " + model + " --predict " + Path("pairs.txt") +
                 " --out " + Path("pred.tsv"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto pred = ReadTsv(Path("pred.tsv"));
  ASSERT_EQ(pred.size(), ratings.size() + 1);
  double sq = 0;
  for (size_t n = 0; n < ratings.size(); ++n) {
    ASSERT_EQ(pred[n].size(), 3u);
    const double err = ratings[n] - std::stod(pred[n][2]);
    sq += err * err;
  }
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(ratings.size())), trained, 1e-4);
  EXPECT_EQ(pred.back()[0], "no-such-user");
  EXPECT_GT(std::stod(pred.back()[2]), 1.0);
  EXPECT_LT(std::stod(pred.back()[2]), 5.0);

  // Top 5 per user, best first, never an item the user rated in training.
  r = RunCommand(Bin("mf") + " --load-model " + model + " --recommend 5 --exclude " +
                 Data("ml-100k/u1.base") + " --out " + Path("top5.tsv"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::pair<std::string, std::string>> rated;
  std::ifstream base(Data("ml-100k/u1.base"));
  for (std::string u, i, rest; base >> u >> i && std::getline(base, rest);) rated.emplace(u, i);
  const auto top = ReadTsv(Path("top5.tsv"));
  ASSERT_EQ(top.size(), 943u * 5);
  std::map<std::string, double> last_score;
  for (const auto& row : top) {
    ASSERT_EQ(row.size(), 3u);
    EXPECT_EQ(rated.count({row[0], row[1]}), 0u) << row[0] << " " << row[1];
    const double score = std::stod(row[2]);
    if (last_score.count(row[0]) > 0) {
      EXPECT_LE(score, last_score[row[0]]);
    }
    last_score[row[0]] = score;
  }
  EXPECT_EQ(last_score.size(), 943u);
}

// Under `tessera run -w 2` W, H and the biases stay partitioned between loops (each worker holds
// part of their rows) and are saved collectively where they live (tessera/array_io.h), yet the
// saved model is the whole trained one: loaded serially it gives the test RMSE the two workers
// reported, and its text export has every row.
TEST_F(ModelTest, MfSavesTheWholeModelFromTwoWorkers) {
#ifndef TESSERA_LAUNCHER_BINARY
  GTEST_SKIP() << "no launcher in this build";
#else
  if (!HaveMovieLens()) GTEST_SKIP() << "no MovieLens data at " << Data("ml-100k");
  const std::string model = Path("model");
  RunResult r = RunCommand(std::string(TESSERA_LAUNCHER_BINARY) + " run -w 2 -s 1 -- " + Bin("mf") +
                           " --train " + Data("ml-100k/u1.base") + " --test " +
                           Data("ml-100k/u1.test") + " -k 8 --epochs 3 --save-model " + model +
                           " --model-text");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // W and H (arrays #2 and #3, after the ratings and the test ratings) are held in part by
  // worker 0 after the saves, which did not make them whole.
  std::smatch held;
  ASSERT_TRUE(std::regex_search(
      r.output, held,
      std::regex(R"(\[worker 0\].*partitioned array #2: this worker holds (\d+) of its 943 rows)")))
      << r.output;
  EXPECT_LT(std::stoi(held[1]), 943);
  ASSERT_TRUE(std::regex_search(
      r.output, held,
      std::regex(R"(\[worker 0\].*partitioned array #3: this worker holds (\d+) of its 1682 rows)")))
      << r.output;
  EXPECT_LT(std::stoi(held[1]), 1682);
  EXPECT_EQ(r.output.find("[worker 1] mf: model saved"), std::string::npos) << r.output;
  std::ifstream w_text(fs::path(model) / "W.txt");
  int rows = 0;
  for (std::string line; std::getline(w_text, line); ++rows) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 7) << line;
  }
  EXPECT_EQ(rows, 943);
  const double trained = LastTestRmse(r.output);
  ASSERT_TRUE(std::isfinite(trained)) << r.output;
  r = RunCommand(Bin("mf") + " --load-model " + model + " --test " + Data("ml-100k/u1.test"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NEAR(LastTestRmse(r.output), trained, 1e-4) << r.output;
#endif
}

// Model paths are checked before the ratings are read, with a message naming the path.
TEST_F(ModelTest, MfRejectsBadModelPathsBeforeTraining) {
  Write("ratings.txt", "1\t1\t5\n1\t2\t3\n2\t1\t4\n2\t2\t1\n");
  Write("file", "x");
  auto mf = [&](const std::string& args) { return RunCommand(Bin("mf") + " " + args); };
  auto expect = [](const RunResult& r, int code, const std::string& words) {
    EXPECT_EQ(r.exit_code, code) << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << words << "\n" << r.output;
    EXPECT_EQ(r.output.find("epoch "), std::string::npos) << r.output;
  };
  expect(mf("--train " + Path("ratings.txt") + " --save-model " + Path("file")), 1,
         "--save-model: InvalidArgument: '" + Path("file") + "' exists and is not a directory");
  expect(mf("--load-model " + Path("none") + " --test " + Path("ratings.txt")), 1,
         "model directory '" + Path("none") + "' does not exist");
  expect(mf("--load-model " + dir_.string() + " --test " + Path("ratings.txt")), 1,
         "has no model.json");
  expect(mf("--load-model " + dir_.string()), 2, "give --test, --predict or --recommend");
  expect(mf("--load-model " + dir_.string() + " --recommend 3"), 2, "need --out FILE");
  expect(mf("--train " + Path("ratings.txt") + " --predict " + Path("ratings.txt")), 2,
         "need --load-model");
  expect(mf("--load-model " + dir_.string() + " --train " + Path("ratings.txt") + " --test x"), 2,
         "drop --train");

  // A real model, then a damaged one.
  const std::string model = Path("m");
  ASSERT_EQ(
      mf("--train " + Path("ratings.txt") + " -k 2 --epochs 1 --save-model " + model).exit_code, 0);
  expect(mf("--load-model " + model + " --recommend 1 --out " + Path("no/dir/out.tsv")), 1,
         "directory '" + Path("no/dir") + "' does not exist");
  expect(mf("--load-model " + model + " --predict " + Path("missing.txt") + " --out " + Path("o")),
         1, "'" + Path("missing.txt") + "' does not exist");
  Write("pairs.txt", "1\n");
  expect(mf("--load-model " + model + " --predict " + Path("pairs.txt") + " --out " + Path("o")), 1,
         "pairs.txt:1: expected 'user item'");
  {
    std::fstream w(model + "/W.tarr", std::ios::in | std::ios::out | std::ios::binary);
    w.seekp(40);
    w.put('\x7f');
  }
  expect(mf("--load-model " + model + " --test " + Path("ratings.txt")), 1,
         "W.tarr': checksum mismatch");
  EXPECT_FALSE(fs::exists(Path("o")));
}

// Topic proportions, one line of numbers per document.
std::vector<std::vector<double>> ReadRows(const std::string& path) {
  std::vector<std::vector<double>> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::stringstream s(line);
    std::vector<double> row;
    for (double x; s >> x;) row.push_back(x);
    rows.push_back(row);
  }
  return rows;
}

double MeanL1(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
              size_t shift) {
  double total = 0;
  for (size_t d = 0; d < a.size(); ++d) {
    const auto& x = a[d];
    const auto& y = b[(d + shift) % b.size()];
    for (size_t k = 0; k < x.size(); ++k) total += std::abs(x[k] - y[k]);
  }
  return total / static_cast<double>(a.size());
}

class LdaModelTest : public ModelTest {
 protected:
  static std::string Corpus() { return Data("20news/docword.20news.txt"); }
  // The first `docs` documents of the corpus as a docword file of their own.
  void WriteFirstDocs(const std::string& name, int docs) const {
    std::ifstream in(Corpus());
    std::string d, w, nnz;
    std::getline(in, d);
    std::getline(in, w);
    std::getline(in, nnz);
    std::stringstream body;
    int64_t entries = 0;
    for (int64_t doc, word, count; in >> doc >> word >> count;) {
      if (doc > docs) break;  // the file is sorted by document
      body << doc << ' ' << word << ' ' << count << '\n';
      ++entries;
    }
    std::ofstream(Path(name)) << docs << '\n' << w << '\n' << entries << '\n' << body.str();
  }
  // The saved model's files, and the proportions of its training documents recovered by folding
  // the same documents in again: close to the trained ones (measured: mean L1 distance 0.12 on
  // 500 documents, K=10, against 1.15 for the proportions of other documents).
  void ExpectUsableModel(const std::string& model, int docs, int topics) {
    for (const char* f : {"model.json", "word_topic.tarr", "doc_topic.tarr", "topics.txt",
                          "doc_topics.txt", "vocab.txt"}) {
      EXPECT_TRUE(fs::exists(fs::path(model) / f)) << f;
    }
    std::ifstream topics_in(fs::path(model) / "topics.txt");
    int lines = 0;
    for (std::string line; std::getline(topics_in, line); ++lines) {
      EXPECT_EQ(line.rfind("topic ", 0), 0u) << line;
    }
    EXPECT_EQ(lines, topics);
    const auto trained = ReadRows(model + "/doc_topics.txt");
    ASSERT_EQ(trained.size(), static_cast<size_t>(docs));
    for (const auto& row : trained) {
      ASSERT_EQ(row.size(), static_cast<size_t>(topics));
      double sum = 0;
      for (double x : row) sum += x;
      EXPECT_NEAR(sum, 1.0, 1e-4);
    }
    WriteFirstDocs("docs.txt", docs);
    const RunResult r = RunCommand(Bin("lda") + " --load-model " + model + " --infer " +
                                   Path("docs.txt") + " --out " + Path("theta.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto inferred = ReadRows(Path("theta.txt"));
    ASSERT_EQ(inferred.size(), trained.size());
    const double same = MeanL1(trained, inferred, 0), other = MeanL1(trained, inferred, docs / 2);
    RecordProperty("fold_in_l1", std::to_string(same));
    EXPECT_LT(same, 0.3);
    EXPECT_GT(other, 3 * same);
  }
};

TEST_F(LdaModelTest, LdaSavesAModelThatFoldsInDocuments) {
  if (!fs::exists(Corpus())) GTEST_SKIP() << "no 20news data at " << Corpus();
  const std::string model = Path("model");
  const RunResult r = RunCommand(Bin("lda") + " --docword " + Corpus() + " --vocab " +
                                 Data("20news/vocab.20news.txt") +
                                 " --max-docs 400 --topics 8 --iterations 20 --eval-every 0 "
                                 "--save-model " +
                                 model + " --model-top-words 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectUsableModel(model, 400, 8);
  std::ifstream topics_in(fs::path(model) / "topics.txt");
  std::string first;
  std::getline(topics_in, first);
  EXPECT_EQ(std::count(first.begin(), first.end(), ' '), 3 + 5) << first;  // "topic k (n tokens):"
}

TEST_F(LdaModelTest, LdaSavesTheWholeModelFromTwoWorkers) {
#ifndef TESSERA_LAUNCHER_BINARY
  GTEST_SKIP() << "no launcher in this build";
#else
  if (!fs::exists(Corpus())) GTEST_SKIP() << "no 20news data at " << Corpus();
  const std::string model = Path("model");
  const RunResult r =
      RunCommand(std::string(TESSERA_LAUNCHER_BINARY) + " run -w 2 -s 1 -- " + Bin("lda") +
                 " --docword " + Corpus() + " --vocab " + Data("20news/vocab.20news.txt") +
                 " --max-docs 400 --topics 8 --iterations 20 --eval-every 0 "
                 "--save-model " +
                 model);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectUsableModel(model, 400, 8);
#endif
}

TEST_F(LdaModelTest, LdaRejectsBadModelPathsBeforeTraining) {
  Write("ok.txt", "2\n3\n3\n1 1 2\n2 3 1\n2 2 1\n");
  Write("wide.txt", "1\n9\n1\n1 9 1\n");
  Write("file", "x");
  auto lda = [&](const std::string& args) { return RunCommand(Bin("lda") + " " + args); };
  auto expect = [](const RunResult& r, int code, const std::string& words) {
    EXPECT_EQ(r.exit_code, code) << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << words << "\n" << r.output;
    EXPECT_EQ(r.output.find("iter "), std::string::npos) << r.output;
  };
  expect(lda("--docword " + Path("ok.txt") + " --topics 2 --save-model " + Path("file")), 1,
         "--save-model: InvalidArgument: '" + Path("file") + "' exists and is not a directory");
  expect(lda("--load-model " + dir_.string() + " --infer " + Path("ok.txt")), 2,
         "needs --infer FILE and --out FILE");
  expect(lda("--infer " + Path("ok.txt") + " --out x"), 2, "give --docword FILE");
  expect(lda("--load-model " + Path("none") + " --infer " + Path("ok.txt") + " --out " + Path("o")),
         1, "model directory '" + Path("none") + "' does not exist");
  const std::string model = Path("m");
  ASSERT_EQ(lda("--docword " + Path("ok.txt") + " --topics 2 --iterations 2 --save-model " + model)
                .exit_code,
            0);
  expect(lda("--load-model " + model + " --infer " + Path("wide.txt") + " --out " + Path("o")), 1,
         "has W = 9 words but the model knows 3");
  expect(lda("--load-model " + model + " --infer " + Path("ok.txt") + " --out " + Path("no/dir/o")),
         1, "directory '" + Path("no/dir") + "' does not exist");
  EXPECT_FALSE(fs::exists(Path("o")));
  const RunResult good =
      lda("--load-model " + model + " --infer " + Path("ok.txt") + " --out " + Path("o"));
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_EQ(ReadRows(Path("o")).size(), 2u);
}

// Plain text to topics and back: the corpus tool builds the training corpus, lda learns two
// topics from documents drawn from two disjoint word lists and saves them, the corpus tool turns
// new text into documents with the model's wordIDs, and folding them in puts each new document
// in its list's topic.
TEST_F(LdaModelTest, PlainTextToTopicsAndBack) {
  const std::vector<std::vector<std::string>> themes = {
      {"cat", "dog", "pet", "fur", "paw", "leash", "kitten", "puppy"},
      {"stock", "market", "price", "trade", "bond", "yield", "equity", "broker"}};
  uint64_t state = 12345;
  auto text = [&](int docs) {
    std::string out;
    for (int d = 0; d < docs; ++d) {
      const auto& words = themes[static_cast<size_t>(d % 2)];
      out += "The";  // a stop word, and upper case
      for (int t = 0; t < 30; ++t) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        out += " " + words[(state >> 33) % words.size()];
      }
      out += ".\n";
    }
    return out;
  };
  Write("train.txt", text(60));
  Write("new.txt", text(10));
  const std::string model = Path("model");
  RunResult r =
      RunCommand(Bin("corpus") + " --text " + Path("train.txt") + " --docword " +
                 Path("docword.txt") + " --vocab " + Path("vocab.txt") + " --english-stop-words");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("60 documents, 16 words, 1800 tokens kept, 60 dropped"),
            std::string::npos)
      << r.output;
  r = RunCommand(Bin("lda") + " --docword " + Path("docword.txt") + " --vocab " +
                 Path("vocab.txt") + " --topics 2 --iterations 30 --save-model " + model);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Bin("corpus") + " --text " + Path("new.txt") + " --docword " +
                 Path("new-docword.txt") + " --vocab-in " + model + "/vocab.txt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(Bin("lda") + " --load-model " + model + " --infer " + Path("new-docword.txt") +
                 " --out " + Path("theta.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto theta = ReadRows(Path("theta.txt"));
  ASSERT_EQ(theta.size(), 10u);
  const size_t topic_of_first = theta[0][0] > theta[0][1] ? 0 : 1;
  for (size_t d = 0; d < theta.size(); ++d) {
    const size_t expected = d % 2 == 0 ? topic_of_first : 1 - topic_of_first;
    EXPECT_GT(theta[d][expected], 0.9) << "document " << d + 1;
  }
}

TEST_F(LdaModelTest, CorpusToolRejectsBadPathsBeforeReading) {
  Write("t.txt", "some words here\n");
  auto corpus = [&](const std::string& args) { return RunCommand(Bin("corpus") + " " + args); };
  RunResult r =
      corpus("--text " + Path("none.txt") + " --docword " + Path("d") + " --vocab " + Path("v"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("'" + Path("none.txt") + "' does not exist"), std::string::npos)
      << r.output;
  r = corpus("--text " + Path("t.txt") + " --docword " + Path("no/dir/d") + " --vocab " +
             Path("v"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("directory '" + Path("no/dir") + "' does not exist"), std::string::npos)
      << r.output;
  r = corpus("--text " + Path("t.txt") + " --docword " + Path("d"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("give --vocab FILE"), std::string::npos) << r.output;
  r = corpus("--text " + Path("t.txt") + " --docword " + Path("d") + " --vocab-in " + Path("none"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(Path("d")));
}

}  // namespace
