// lda's --vocab reader: word n is line n, line endings of either kind dropped, the same words as
// the corpus tool's --vocab-in reads, and a model's vocab.txt reads back to the same words.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "corpus/text_corpus.h"
#include "lda/vocabulary.h"

namespace lda {
namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;
using namespace std::string_literals;

class LdaVocabularyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_lda_vocabulary_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  fs::path dir_;
};

TEST_F(LdaVocabularyTest, WordNIsLineNWithoutItsLineEnding) {
  const std::string path = Write("v.txt", "alpha\r\nbeta\n\ngam\rma\nna\0ive\r\r\ndelta"s);
  auto words = ReadVocabulary(path);
  ASSERT_TRUE(words.ok()) << words.status().ToString();
  EXPECT_EQ(*words, (Words{"alpha", "beta", "", "gam\rma", "na\0ive"s, "delta"}));
  // The corpus tool reads the same file to the same words (corpus --vocab-in).
  auto corpus_words = corpus::ReadWordList(path);
  ASSERT_TRUE(corpus_words.ok());
  EXPECT_EQ(*corpus_words, *words);
}

// A line ending in "\r\r\n" was read as a word ending in '\r', which a model's vocab.txt (one
// word per line) then gave back without it.
TEST_F(LdaVocabularyTest, WordsWrittenOnePerLineReadBackTheSame) {
  auto words = ReadVocabulary(Write("v.txt", "one\r\r\ntwo\r\r\r\nthree"));
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(*words, (Words{"one", "two", "three"}));
  std::string written;
  for (const std::string& w : *words) written += w + "\n";
  auto again = ReadVocabulary(Write("model-vocab.txt", written));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *words);
}

TEST_F(LdaVocabularyTest, EmptyFileIsAnEmptyVocabulary) {
  auto words = ReadVocabulary(Write("empty.txt", ""));
  ASSERT_TRUE(words.ok());
  EXPECT_TRUE(words->empty());
}

TEST_F(LdaVocabularyTest, MissingFileOrDirectoryIsAClearError) {
  const std::string missing = (dir_ / "nope.txt").string();
  auto absent = ReadVocabulary(missing);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), tessera::StatusCode::kNotFound);
  EXPECT_NE(absent.status().message().find("the vocabulary --vocab: cannot open '" + missing + "'"),
            std::string::npos)
      << absent.status().ToString();
  auto dir = ReadVocabulary(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), tessera::StatusCode::kInvalidArgument);
  EXPECT_NE(dir.status().message().find("--vocab '" + dir_.string() + "' is a directory"),
            std::string::npos)
      << dir.status().ToString();
}

}  // namespace
}  // namespace lda
