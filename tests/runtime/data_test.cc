// Readers for rating triples and UCI docword files: every format, id mapping, splits, byte ranges,
// and a clear Status (with the line) for every kind of bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <string>

#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class DataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_data_test_" + std::to_string(::getpid()) + "_" +
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

// Option builders: designated initializers that leave fields out trip -Wmissing-field-initializers.
TripleOptions WithTestPath(std::string path) {
  TripleOptions o;
  o.test_path = std::move(path);
  return o;
}
TripleOptions WithSplit(double fraction, uint64_t seed) {
  TripleOptions o;
  o.test_fraction = fraction;
  o.split_seed = seed;
  return o;
}
TripleOptions WithRange(int64_t begin, int64_t end) {
  TripleOptions o;
  o.range = {begin, end};
  return o;
}
DocwordOptions DocRange(int64_t begin, int64_t end) {
  DocwordOptions o;
  o.range = {begin, end};
  return o;
}
DocwordOptions MaxDocs(int64_t n) {
  DocwordOptions o;
  o.max_docs = n;
  return o;
}

// The rating stored for external ids (user, item), or -1.
float Rating(const TripleData<float>& d, int64_t user, int64_t item) {
  const int64_t u = d.users.index(user), i = d.items.index(item);
  if (u < 0 || i < 0) return -1;
  return d.train.get({{u, i}});
}

TEST_F(DataTest, ReadsEveryTripleFormat) {
  const std::string files[] = {
      Write("tab", "10\t200\t4\t881250949\n30\t100\t2\t881250950\n10\t100\t5\t881250951\n"),
      Write("colon", "10::200::4::881250949\n30::100::2::881250950\n10::100::5::881250951\n"),
      Write("csv", "userId,movieId,rating,timestamp\r\n10,200,4.0,881250949\r\n30,100,2.0,1\r\n"
                   "10,100,5.0,2\r\n"),
      Write("plain", "10 200 4\n  30   100 2\n\n10 100\t5\n"),
      Write("bom_csv", "\xEF\xBB\xBF" "10,200,4\n30,100,2\n10,100,5\n"),
  };
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    auto d = load_triples<float>(ctx_, f);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->train.nnz(), 3);
    EXPECT_EQ(d->test.nnz(), 0);
    // Sparse ids are mapped densely in increasing id order.
    EXPECT_EQ(d->users.size(), 2);
    EXPECT_EQ(d->items.size(), 2);
    EXPECT_EQ(d->users.index(10), 0);
    EXPECT_EQ(d->users.index(30), 1);
    EXPECT_EQ(d->users.index(20), -1);
    EXPECT_EQ(d->items.external(1), 200);
    EXPECT_EQ(d->train.shape()[0], 2);
    EXPECT_EQ(Rating(*d, 10, 200), 4.0f);
    EXPECT_EQ(Rating(*d, 30, 100), 2.0f);
    EXPECT_EQ(Rating(*d, 10, 100), 5.0f);
    EXPECT_EQ(d->train.key_at(0), (Key<2>{{0, 1}}));  // file order kept
  }
}

TEST_F(DataTest, SeparateTestFileSharesTheIdMaps) {
  const std::string train = Write("train", "1\t1\t3\n2\t2\t4\n");
  const std::string test = Write("test", "1\t2\t5\n3\t1\t1\n");  // user 3 only in the test file
  auto d = load_triples<float>(ctx_, train, WithTestPath(test));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->train.nnz(), 2);
  EXPECT_EQ(d->test.nnz(), 2);
  EXPECT_EQ(d->users.size(), 3);
  EXPECT_EQ(d->test.shape(), d->train.shape());
  EXPECT_EQ(d->test.get({{d->users.index(1), d->items.index(2)}}), 5.0f);
}

TEST_F(DataTest, FractionSplitIsDisjointDeterministicAndRoughlySized) {
  std::string contents;
  for (int u = 0; u < 100; ++u)
    for (int i = 0; i < 20; ++i) contents += std::to_string(u) + " " + std::to_string(i) + " 1\n";
  const std::string f = Write("grid", contents);
  auto a = load_triples<double>(ctx_, f, WithSplit(0.2, 7));
  auto b = load_triples<double>(ctx_, f, WithSplit(0.2, 7));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->train.nnz() + a->test.nnz(), 2000);
  EXPECT_GT(a->test.nnz(), 300);
  EXPECT_LT(a->test.nnz(), 500);
  EXPECT_EQ(a->test.nnz(), b->test.nnz());
  for (int64_t p = 0; p < a->test.nnz(); ++p) {
    EXPECT_FALSE(a->train.contains(a->test.key_at(p)));
    EXPECT_TRUE(b->test.contains(a->test.key_at(p)));
  }
}

TEST_F(DataTest, ByteRangesReadEveryLineExactlyOnce) {
  std::string contents;
  for (int i = 0; i < 50; ++i) contents += std::to_string(i) + "\t" + std::to_string(i * 7) + "\t3\n";
  const std::string f = Write("ranges", contents);
  const int64_t size = static_cast<int64_t>(contents.size());
  for (int64_t cut : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{6}, size / 3, size / 2, size - 1, size}) {
    SCOPED_TRACE(cut);
    auto first = load_triples<float>(ctx_, f, WithRange(0, cut));
    auto second = load_triples<float>(ctx_, f, WithRange(cut, -1));
    int64_t total = 0;
    std::set<int64_t> users;
    for (auto* part : {&first, &second}) {
      ASSERT_TRUE(part->ok()) << part->status().ToString();  // an empty share is not an error
      total += (*part)->train.nnz();
      for (int64_t p = 0; p < (*part)->train.nnz(); ++p) {
        EXPECT_TRUE(users.insert((*part)->users.external((*part)->train.key_at(p)[0])).second);
      }
    }
    EXPECT_EQ(total, 50);
    EXPECT_EQ(users.size(), 50u);
  }
}

struct BadInput {
  const char* name;
  const char* contents;
  const char* expect;  // substring of the message
};

TEST_F(DataTest, BadTriplesAreClearErrors) {
  const BadInput cases[] = {
      {"too_few", "1\t2\t3\n4\t5\n", ":2: expected 3 or 4"},
      {"too_many", "1 2 3 4 5\n", ":1: expected 3 or 4"},
      {"user_text", "1,2,3\nbob,2,3\n", ":2: user id 'bob' is not an integer"},
      {"item_float", "1::2.5::3\n", ":1: item id '2.5' is not an integer"},
      {"rating_text", "1\t2\tgood\n", ":1: rating 'good' is not a finite number"},
      {"rating_nan", "1\t2\tnan\n", ":1: rating 'nan' is not a finite number"},
      {"empty_field", "1\t\t3\n", ":1: item id '' is not an integer"},
      {"timestamp", "1\t2\t3\tyesterday\n", ":1: timestamp 'yesterday'"},
      {"header_not_csv", "user item rating\n1 2 3\n", ":1: user id 'user'"},
      {"duplicate", "1 2 3\n1 2 4\n", "user 1 rated item 2 more than once"},
      {"empty", "\n\n", "no ratings"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string f = Write(c.name, c.contents);
    auto d = load_triples<float>(ctx_, f);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos) << d.status().message();
  }
  auto missing = load_triples<float>(ctx_, (dir_ / "nope").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  auto bad_option = load_triples<float>(ctx_, Write("ok", "1 2 3\n"), WithSplit(1.5, 1));
  EXPECT_EQ(bad_option.status().code(), StatusCode::kInvalidArgument);
  // An error in a range that does not start at byte 0 names the byte offset instead.
  auto ranged = load_triples<float>(ctx_, Write("ranged", "1 2 3\n4 x 6\n"), WithRange(6, -1));
  ASSERT_FALSE(ranged.ok());
  EXPECT_NE(ranged.status().message().find(":byte 6: item id 'x'"), std::string::npos)
      << ranged.status().message();
}

TEST_F(DataTest, ReadsDocword) {
  const std::string f = Write("docword", "3\n5\n4\n1 1 2\n1 5 1\n2 3 4\n3 2 1\n");
  auto c = load_docword(ctx_, f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_docs, 3);
  EXPECT_EQ(c->vocab_size, 5);
  EXPECT_EQ(c->num_tokens, 8);
  EXPECT_EQ(c->counts.nnz(), 4);
  EXPECT_EQ(c->counts.get({{0, 4}}), 1);
  EXPECT_EQ(c->counts.get({{1, 2}}), 4);
  auto sub = load_docword(ctx_, f, MaxDocs(1));
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->num_docs, 1);
  EXPECT_EQ(sub->counts.nnz(), 2);
  EXPECT_EQ(sub->num_tokens, 3);
  // Two byte ranges split anywhere read all entries once.
  const int64_t size = static_cast<int64_t>(fs::file_size(f));
  for (int64_t cut = 0; cut <= size; ++cut) {
    auto a = load_docword(ctx_, f, DocRange(0, cut));
    auto b = load_docword(ctx_, f, DocRange(cut, -1));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(a->counts.nnz() + b->counts.nnz(), 4) << "cut at " << cut;
    EXPECT_EQ(a->num_tokens + b->num_tokens, 8);
  }
}

TEST_F(DataTest, BadDocwordAreClearErrors) {
  const BadInput cases[] = {
      {"no_header", "", "missing header line 1"},
      {"short_header", "3\n5\n", "missing header line 3"},
      {"bad_header", "3\nfive\n1\n1 1 1\n", ":2: header line should be W"},
      {"fields", "2\n2\n1\n1 1\n", ":4: expected 3 fields"},
      {"text", "2\n2\n1\n1 one 1\n", ":4: wordID 'one' is not an integer"},
      {"doc_range", "2\n2\n1\n3 1 1\n", ":4: docID 3 outside [1, 2]"},
      {"word_range", "2\n2\n2\n1 1 1\n1 0 1\n", ":5: wordID 0 outside [1, 2]"},
      {"count", "2\n2\n1\n1 1 0\n", ":4: count 0"},
      {"duplicate", "2\n2\n2\n1 1 1\n1 1 2\n", ":5: (docID 1, wordID 1) appears twice"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.name);
    auto d = load_docword(ctx_, Write(c.name, c.contents));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos) << d.status().message();
  }
  auto truncated = load_docword(ctx_, Write("truncated", "2\n2\n3\n1 1 1\n2 2 1\n"));
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(truncated.status().message().find("NNZ = 3"), std::string::npos);
  EXPECT_EQ(load_docword(ctx_, (dir_ / "nope").string()).status().code(), StatusCode::kNotFound);
}

TEST_F(DataTest, MetricsLogWritesJsonLines) {
  const std::string path = (dir_ / "m.jsonl").string();
  {
    auto log = MetricsLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE(log->Write(MetricsRecord().set("app", "mf").set("epoch", 1).set("rmse", 0.5)).ok());
    ASSERT_TRUE(log->Write(MetricsRecord().set("epoch", 2).set("rmse", std::nan(""))).ok());
  }
  std::ifstream in(path);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(l1, R"({"app":"mf","epoch":1,"rmse":0.5})");
  EXPECT_EQ(l2, R"({"epoch":2,"rmse":null})");
  EXPECT_EQ(MetricsLog::Open((dir_ / "no" / "such" / "dir").string()).status().code(),
            StatusCode::kNotFound);
}

// The ETA of progress lines is the rest of the whole run at the average pace of the steps done:
// `elapsed` covers every step so far, not the last one.
TEST(FormatEtaTest, TheRestOfTheRunAtThePaceSoFar) {
  EXPECT_EQ(FormatEta(10.0, 2, 20), "eta 1m30s");  // 5 s a step, 18 steps left
  EXPECT_EQ(FormatEta(30.0, 1, 3), "eta 1m00s");
  EXPECT_EQ(FormatEta(1.0, 4, 6), "eta 1s");  // rounded: 0.5 s
  EXPECT_EQ(FormatEta(7200.0, 1, 3), "eta 4h00m");
  EXPECT_EQ(FormatEta(5.0, 20, 20), "");  // nothing left
  EXPECT_EQ(FormatEta(5.0, 0, 20), "");   // no pace yet
  EXPECT_EQ(FormatEta(std::nan(""), 1, 20), "");
}

// Ids with and without gaps map alike: index = rank among the distinct ids, -1 when unknown.
TEST(IdMapTest, IdsWithAndWithoutGapsMapToTheirRank) {
  const std::vector<std::vector<int64_t>> cases = {
      {5, 3, 4, 3, 6},             // no gaps, duplicates
      {-2, 0, -1},                 // no gaps, negative
      {7},                         // one id
      {10, 1, 1000000007, 3, 10},  // gaps
      {INT64_MIN, INT64_MAX, 0},   // gaps as wide as they come
  };
  for (const auto& ids : cases) {
    const IdMap map(ids);
    std::set<int64_t> distinct(ids.begin(), ids.end());
    ASSERT_EQ(map.size(), static_cast<int64_t>(distinct.size()));
    int64_t rank = 0;
    for (int64_t id : distinct) {
      EXPECT_EQ(map.index(id), rank);
      EXPECT_EQ(map.external(rank), id);
      ++rank;
    }
    for (int64_t unknown : {int64_t{-3}, int64_t{1}, int64_t{2}, int64_t{8}, int64_t{11}}) {
      if (distinct.count(unknown) == 0) {
        EXPECT_EQ(map.index(unknown), -1) << unknown;
      }
    }
  }
  EXPECT_EQ(IdMap().index(0), -1);
}

}  // namespace
}  // namespace tessera
