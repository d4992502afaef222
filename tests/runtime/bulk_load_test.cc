// The loaders on inputs larger than the line reader's block (lines that cross a block's end, byte
// ranges cut anywhere), the common-line fast path against the general one (every spelling the
// general path accepts reads the same values), and whole-array checks that run after the records
// are stored (duplicates, id maps of ids with large gaps).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "input/line_reader.h"
#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class BulkLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_bulk_load_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& contents) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }
  static ContextOptions Hermetic() {
    ContextOptions o;
    o.read_environment = false;
    return o;
  }

  fs::path dir_;
  Context ctx_{Hermetic()};
};

TripleOptions WithRange(int64_t begin, int64_t end) {
  TripleOptions o;
  o.range = {begin, end};
  return o;
}

// (user id, item id) -> rating of every record of `d`'s train array, by external id.
std::map<std::pair<int64_t, int64_t>, float> ByExternalId(const TripleData<float>& d) {
  std::map<std::pair<int64_t, int64_t>, float> out;
  for (int64_t p = 0; p < d.train.nnz(); ++p) {
    const Key<2> k = d.train.key_at(p);
    out[{d.users.external(k[0]), d.items.external(k[1])}] = d.train.value_at(p);
  }
  return out;
}

// A file of `lines` ratings (16 bytes a line on average), with lines of varying length so that
// block ends fall inside lines.
std::string ManyRatings(int64_t lines) {
  std::string s;
  for (int64_t i = 0; i < lines; ++i) {
    s += std::to_string(i * 7919 % 100003) + " " + std::to_string(i % 977) + " " +
         std::to_string(i % 5) + ".25" + std::string(static_cast<size_t>(i % 3), ' ') + "\n";
  }
  return s;
}

TEST_F(BulkLoadTest, LinesAcrossBlocksAreReadOnceWhereverRangesAreCut) {
  const int64_t lines = 700000;  // about 2.8 blocks of internal::LineReader::kBlockBytes
  const std::string contents = ManyRatings(lines);
  ASSERT_GT(contents.size(), 2 * internal::LineReader::kBlockBytes);
  const std::string f = Write("many", contents);
  auto whole = load_triples<float>(ctx_, f);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->train.nnz(), lines);
  // File order is kept: the i-th record is the i-th line.
  for (int64_t i : {int64_t{0}, int64_t{1}, lines / 2, lines - 1}) {
    const Key<2> k = whole->train.key_at(i);
    EXPECT_EQ(whole->users.external(k[0]), i * 7919 % 100003);
    EXPECT_EQ(whole->items.external(k[1]), i % 977);
    EXPECT_EQ(whole->train.value_at(i), static_cast<float>(i % 5) + 0.25f);
  }
  const int64_t size = static_cast<int64_t>(contents.size());
  const int64_t block = static_cast<int64_t>(internal::LineReader::kBlockBytes);
  for (int64_t cut : {block - 1, block, block + 1, size / 2, 2 * block + 3}) {
    SCOPED_TRACE(cut);
    auto first = load_triples<float>(ctx_, f, WithRange(0, cut));
    auto second = load_triples<float>(ctx_, f, WithRange(cut, -1));
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(first->train.nnz() + second->train.nnz(), lines);
  }
}

TEST_F(BulkLoadTest, LineReaderCountsLinesAndOffsetsAcrossBlocks) {
  std::string contents;
  for (int i = 0; i < 800000; ++i) contents += "line " + std::to_string(i) + "\r\n";
  const std::string f = Write("lines", contents);
  auto reader = internal::LineReader::Open(f, ReadRange{});
  ASSERT_TRUE(reader.ok());
  std::string_view line;
  int n = 0;
  int64_t offset = 0;
  while (reader->Next(&line)) {
    const std::string want = "line " + std::to_string(n);
    ASSERT_EQ(line, want);  // "\r\n" taken off
    offset += static_cast<int64_t>(want.size()) + 2;
    ASSERT_EQ(reader->offset(), offset);
    ++n;
  }
  EXPECT_EQ(n, 800000);
  EXPECT_TRUE(reader->status().ok());
  EXPECT_EQ(reader->Where(), f + ":800000");
}

TEST_F(BulkLoadTest, EverySpellingReadsTheSameValues) {
  // Lines the fast path takes and lines only the general path takes ('+' signs, a timestamp,
  // blanks around CSV fields, exponents), mixed in one file of each format.
  const std::map<std::pair<int64_t, int64_t>, float> want = {
      {{1, 10}, 4.5f}, {{2, 20}, -1.0f}, {{3, 30}, 1e-3f}, {{4, 40}, 250.0f}, {{5, 50}, 3.0f}};
  const char* files[] = {
      "1 10 4.5\n  2\t20   -1  \n+3 30 0.001\n4 40 2.5e2 1700000000\n5 +50 +3\n",
      "1\t10\t4.5\n2\t20\t-1\n+3\t30\t0.001\n4\t40\t2.5e2\t1700000000\n5\t+50\t+3\n",
      "1,10,4.5\n 2 , 20 , -1 \n+3,30,0.001\n4,40,2.5e2,1700000000\n5,+50,+3\n",
  };
  for (const char* contents : files) {
    SCOPED_TRACE(contents);
    auto d = load_triples<float>(ctx_, Write("spellings", contents));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(ByExternalId(*d), want);
  }
}

TEST_F(BulkLoadTest, MalformedLinesAfterCommonOnesAreNamed) {
  struct Case {
    const char* contents;
    const char* expect;
  } cases[] = {
      {"1 2 3\n4 5 6x\n", ":2: rating '6x' is not a finite number"},
      {"1 2 3\n4 5 inf\n", ":2: rating 'inf' is not a finite number"},
      {"1 2 3\n4 5\n", ":2: expected 3 or 4 whitespace-separated fields"},
      {"1\t2\t3\n4\t5\t6 \n", ":2: rating '6 ' is not a finite number"},
      {"1,2,3\n4,5,6,\n", ":2: timestamp ''"},
      {"1 2 3\n99999999999999999999 5 6\n", ":2: user id '99999999999999999999' is not an integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.contents);
    auto d = load_triples<float>(ctx_, Write("bad", c.contents));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos) << d.status().message();
  }
}

TEST_F(BulkLoadTest, TheSmallestDuplicateIsNamedWhereverItIs) {
  // Two duplicates, far apart in the file; the one with the smaller (user, item) is named, as a
  // sort of every key would find it.
  std::string contents;
  for (int u = 1; u <= 2000; ++u) {
    for (int i = 1; i <= 5; ++i)
      contents += std::to_string(u) + " " + std::to_string(i * 3) + " 1\n";
  }
  contents += "1500 9 2\n";  // (1500, 9) twice
  contents += "700 15 2\n";  // (700, 15) twice: the smaller
  auto d = load_triples<float>(ctx_, Write("dups", contents));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("user 700 rated item 15 more than once"), std::string::npos)
      << d.status().message();
}

TEST_F(BulkLoadTest, IdsWithLargeGapsMapToTheirRank) {
  // A span far wider than the ids' count takes the sorting path rather than a bitmap of the span.
  auto d = load_triples<float>(
      ctx_, Write("gaps", "9000000000000 5 1\n-7 5 2\n42 123456789012 3\n-7 123456789012 4\n"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->users.size(), 3);
  EXPECT_EQ(d->users.external(0), -7);
  EXPECT_EQ(d->users.external(1), 42);
  EXPECT_EQ(d->users.external(2), 9000000000000);
  EXPECT_EQ(d->users.index(42), 1);
  EXPECT_EQ(d->items.index(123456789012), 1);
  EXPECT_EQ(d->train.value_at(3), 4.0f);
  EXPECT_EQ(d->train.key_at(3)[0], 0);
  EXPECT_EQ(d->train.key_at(3)[1], 1);
}

TEST_F(BulkLoadTest, DocwordAcrossBlocksAndItsErrors) {
  const int64_t docs = 30000, vocab = 4000;
  std::string entries;
  int64_t nnz = 0, tokens = 0;
  for (int64_t d = 1; d <= docs; ++d) {
    for (int64_t j = 0; j < 12; ++j) {
      const int64_t count = (d + j) % 4 + 1;
      entries += std::to_string(d) + " " + std::to_string((d * 31 + j * 97) % vocab + 1) + " " +
                 std::to_string(count) + (j % 5 == 0 ? "  \n" : "\n");
      ++nnz;
      tokens += count;
    }
  }
  const std::string header =
      std::to_string(docs) + "\n" + std::to_string(vocab) + "\n" + std::to_string(nnz) + "\n";
  auto corpus = load_docword(ctx_, Write("docword", header + entries));
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  EXPECT_EQ(corpus->counts.nnz(), nnz);
  EXPECT_EQ(corpus->num_tokens, tokens);
  // A bad line after many good ones is still named, by its line number.
  auto bad = load_docword(ctx_, Write("bad", header + entries + "1 2 +\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":" + std::to_string(nnz + 4) + ": count '+'"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace tessera
