// The corpus tool's library: tokenizing, vocabulary filters, a fixed vocabulary, and files that
// tessera::load_docword reads back; errors for what it cannot use.
#include "corpus/text_corpus.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tessera/tessera.h"

namespace corpus {
namespace {

namespace fs = std::filesystem;
using Entry = std::pair<int64_t, int32_t>;

class TextCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_text_corpus_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

TEST_F(TextCorpusTest, TokenizesWordsLowerCasedKeepingApostrophesAndUtf8) {
  EXPECT_EQ(Tokenize("Hello, World! It's 'quoted' x2 3.14 na\xC3\xAFve -- don't", true),
            (std::vector<std::string>{"hello", "world", "it's", "quoted", "x2", "3", "14",
                                      "na\xC3\xAFve", "don't"}));
  EXPECT_EQ(Tokenize("Keep CASE", false), (std::vector<std::string>{"Keep", "CASE"}));
  EXPECT_TRUE(Tokenize(" ,.;'' ", true).empty());
}

TEST_F(TextCorpusTest, BuildsAnAlphabeticalVocabularyWithTheFilters) {
  const std::string text =
      "The cat sat on the mat. The cat!\n"
      "\n"
      "A dog and a cat; 42 dogs.\n"
      "Dog dog DOG mat x cat\n";
  Options o;
  o.stop_words = EnglishStopWords();
  auto c = Build(Write("t.txt", text), o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // "the", "on", "a", "and" are stop words; "42" has no letter; "x" is too short.
  EXPECT_EQ(c->vocab, (std::vector<std::string>{"cat", "dog", "dogs", "mat", "sat"}));
  ASSERT_EQ(c->docs.size(), 4u);  // the empty line is document 2
  EXPECT_EQ(c->docs[0], (std::vector<Entry>{{1, 2}, {4, 1}, {5, 1}}));
  EXPECT_TRUE(c->docs[1].empty());
  EXPECT_EQ(c->docs[2], (std::vector<Entry>{{1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(c->docs[3], (std::vector<Entry>{{1, 1}, {2, 3}, {4, 1}}));
  EXPECT_EQ(c->tokens, 12);

  o.min_df = 2;    // in at least 2 documents: cat (3), dog (2), mat (2)
  o.max_df = 0.5;  // in at most 2 of 4 documents: not cat
  c = Build(Write("t.txt", text), o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vocab, (std::vector<std::string>{"dog", "mat"}));
  EXPECT_EQ(c->docs[3], (std::vector<Entry>{{1, 3}, {2, 1}}));
}

TEST_F(TextCorpusTest, FixedVocabularyKeepsItsWordIds) {
  Options o;
  o.fixed_vocab = {"mat", "cat", "zebra"};
  auto c = Build(Write("t.txt", "the cat and the zebra\nno known words\ncat cat mat\n"), o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vocab, o.fixed_vocab);
  EXPECT_EQ(c->docs[0], (std::vector<Entry>{{2, 1}, {3, 1}}));
  EXPECT_TRUE(c->docs[1].empty());
  EXPECT_EQ(c->docs[2], (std::vector<Entry>{{1, 1}, {2, 2}}));
}

TEST_F(TextCorpusTest, WrittenFilesLoadAsADocwordCorpus) {
  std::string text;
  for (int d = 0; d < 50; ++d)
    text += "alpha beta beta gamma" + std::string(d % 2 ? " delta\n" : "\n");
  // gzip-compressed input reads the same.
  const std::string gz = (dir_ / "t.txt.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  auto c = Build(gz, Options{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::string docword = (dir_ / "docword.txt").string(),
                    vocab = (dir_ / "vocab.txt").string();
  ASSERT_TRUE(corpus::Write(*c, docword, vocab).ok());
  tessera::ContextOptions co;
  co.read_environment = false;
  tessera::Context ctx(std::move(co));
  auto loaded = tessera::load_docword(ctx, docword);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->num_docs, 50);
  EXPECT_EQ(loaded->vocab_size, 4);
  EXPECT_EQ(loaded->num_tokens, 50 * 4 + 25);
  EXPECT_EQ(loaded->counts.get({{0, 1}}), 2);  // "beta" (wordID 2) twice in document 1
  std::ifstream v(vocab);
  std::string first;
  std::getline(v, first);
  EXPECT_EQ(first, "alpha");
}

TEST_F(TextCorpusTest, UnusableInputIsAClearError) {
  auto missing = Build((dir_ / "none.txt").string(), Options{});
  EXPECT_EQ(missing.status().code(), tessera::StatusCode::kNotFound) << missing.status().ToString();
  auto empty = Build(Write("empty.txt", ""), Options{});
  EXPECT_NE(empty.status().message().find("holds no documents"), std::string::npos)
      << empty.status().ToString();
  Options o;
  o.stop_words = EnglishStopWords();
  auto nothing = Build(Write("stop.txt", "the and of\na an\n"), o);
  EXPECT_EQ(nothing.status().code(), tessera::StatusCode::kInvalidArgument);
  EXPECT_NE(nothing.status().message().find("no word is left"), std::string::npos)
      << nothing.status().ToString();
}

}  // namespace
}  // namespace corpus
