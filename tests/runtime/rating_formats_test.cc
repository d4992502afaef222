// Rating formats beyond "user item rating" lines: the Netflix prize files (movie lines followed
// by their ratings; read whole, by byte ranges, compressed) and string ids (mapped to dense
// indices, their strings given back by read_id_names); each with its errors.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class RatingFormatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_formats_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string Gzip(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    gzclose(f);
    return p;
  }
  static ContextOptions Hermetic() {
    ContextOptions o;
    o.read_environment = false;
    return o;
  }

  fs::path dir_;
  Context ctx_{Hermetic()};
};

using Triple = std::tuple<int64_t, int64_t, float>;  // external user, external item, rating

std::set<Triple> Triples(const TripleData<float>& d) {
  std::set<Triple> out;
  for (int64_t p = 0; p < d.train.nnz(); ++p) {
    const Key<2>& k = d.train.key_at(p);
    out.emplace(d.users.external(k[0]), d.items.external(k[1]), d.train.value_at(p));
  }
  return out;
}

// 60 movies of 1-9 ratings each, users 100.. in a pattern; movie lines and dates as Netflix's.
std::string NetflixText(std::set<Triple>* expected) {
  std::string text;
  for (int movie = 1; movie <= 60; ++movie) {
    text += std::to_string(movie) + ":\n";
    for (int j = 0; j < 1 + movie % 9; ++j) {
      const int user = 100 + (movie * 7 + j * 13) % 97;
      const int rating = 1 + (movie + j) % 5;
      text += std::to_string(user) + "," + std::to_string(rating) + ",2005-09-0" +
              std::to_string(1 + j % 9) + "\n";
      expected->emplace(user, movie, static_cast<float>(rating));
    }
  }
  return text;
}

TEST_F(RatingFormatsTest, NetflixFilesAreReadWhole) {
  std::set<Triple> expected;
  const std::string text = NetflixText(&expected);
  for (TripleFormat format : {TripleFormat::kAuto, TripleFormat::kNetflix}) {
    TripleOptions options;
    options.format = format;
    auto d = load_triples<float>(ctx_, Write("netflix.txt", text), options);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->items.size(), 60);
    EXPECT_EQ(Triples(*d), expected);
  }
  // The date is optional, blanks around fields and a CRLF are allowed.
  auto small = load_triples<float>(ctx_, Write("small.txt", "7:\r\n 42 , 4\r\n43,5,2005-01-02\n"));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(Triples(*small), (std::set<Triple>{{42, 7, 4.0f}, {43, 7, 5.0f}}));
}

// A share that starts after a movie line finds its movie, whatever the boundary, plain or gzip.
TEST_F(RatingFormatsTest, NetflixByteRangesTogetherReadTheWholeFile) {
  std::set<Triple> expected;
  const std::string text = NetflixText(&expected);
  for (bool gzip : {false, true}) {
    SCOPED_TRACE(gzip ? "gzip" : "plain");
    const std::string path = gzip ? Gzip("n.gz", text) : Write("n.txt", text);
    const int64_t size = static_cast<int64_t>(text.size());
    for (int64_t cut : {int64_t{1}, int64_t{3}, size / 3, size / 2, size / 2 + 1, size - 2}) {
      SCOPED_TRACE(cut);
      std::set<Triple> together;
      for (ReadRange range : {ReadRange{0, cut}, ReadRange{cut, -1}}) {
        TripleOptions options;
        options.format = TripleFormat::kNetflix;
        options.range = range;
        auto d = load_triples<float>(ctx_, path, options);
        ASSERT_TRUE(d.ok()) << d.status().ToString();
        for (const Triple& t : Triples(*d)) EXPECT_TRUE(together.insert(t).second);
      }
      EXPECT_EQ(together, expected);
    }
  }
}

// A header far before the range (more than one backward read window) is still found.
TEST_F(RatingFormatsTest, NetflixRangeFindsADistantMovieLine) {
  std::string text = "5:\n";
  for (int user = 1; user <= 20000; ++user) text += std::to_string(user) + ",3,2005-09-06\n";
  text += "6:\n1,4\n";
  TripleOptions options;
  options.format = TripleFormat::kNetflix;
  options.range = ReadRange{static_cast<int64_t>(text.size()) - 200, -1};
  auto d = load_triples<float>(ctx_, Write("long.txt", text), options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::set<Triple> got = Triples(*d);
  EXPECT_TRUE(got.count({20000, 5, 3.0f})) << got.size();
  EXPECT_TRUE(got.count({1, 6, 4.0f}));
}

TEST_F(RatingFormatsTest, MalformedNetflixInputIsAClearError) {
  struct Case {
    const char* name;
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"valid", "1:\n10,3\n", nullptr},  // checks that the cases differ from it only in their fault
      {"rating_first", "10,3,2005-09-06\n1:\n", ":1: rating line '10,3,2005-09-06' before any"},
      {"fields", "1:\n10,3,2005-09-06,x\n", ":2: expected 'user,rating[,date]' under movie 1"},
      {"one_field", "1:\n10\n", ":2: expected 'user,rating[,date]'"},
      {"rating", "1:\n10,good\n", ":2: rating 'good' is not a finite number"},
      {"date", "1:\n10,3,yesterday\n", ":2: date 'yesterday' is neither"},
      {"user", "1:\n10,3\nbob,4\n", ":3: user id 'bob' is not an integer"},
      {"movie", "1:\n10,3\nx1:\n", ":3: a Netflix movie line is a movie id and ':'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TripleOptions options;
    options.format = TripleFormat::kNetflix;
    auto d = load_triples<float>(ctx_, Write(c.name, c.text), options);
    if (c.expect == nullptr) {
      EXPECT_TRUE(d.ok()) << d.status().ToString();
      continue;
    }
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(std::string(c.name)), std::string::npos)
        << d.status().message();  // the file is named
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos) << d.status().message();
  }
}

TEST_F(RatingFormatsTest, StringIdsMapToDenseIndicesAndBack) {
  // CSV whose only numbers are the ratings: the first line is data, not a header.
  const std::string path = Write("amazon.csv",
                                 "A3SGXH7AUHU8GW,B001E4KFG0,5.0\n"
                                 "A1D87F6ZCVE5NK,B00813GRG4,1.0\n"
                                 "A3SGXH7AUHU8GW,B00813GRG4,4.0\n"
                                 "007,B001E4KFG0,2\n");
  TripleOptions options;
  options.string_ids = true;
  auto d = load_triples<float>(ctx_, path, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->train.nnz(), 4);
  ASSERT_EQ(d->users.size(), 3);
  ASSERT_EQ(d->items.size(), 2);
  auto names = read_id_names(path, options, d->users, d->items);
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  ASSERT_EQ(names->users.size(), 3u);
  ASSERT_EQ(names->items.size(), 2u);
  // Every index's string is the one whose key it holds; "007" stays as written.
  for (int64_t u = 0; u < d->users.size(); ++u) {
    EXPECT_EQ(string_id_key(names->users[u]), d->users.external(u)) << names->users[u];
  }
  std::set<std::string> users(names->users.begin(), names->users.end());
  EXPECT_EQ(users, (std::set<std::string>{"A3SGXH7AUHU8GW", "A1D87F6ZCVE5NK", "007"}));
  const int64_t u = d->users.index(string_id_key("A3SGXH7AUHU8GW"));
  const int64_t i = d->items.index(string_id_key("B00813GRG4"));
  ASSERT_GE(u, 0);
  ASSERT_GE(i, 0);
  EXPECT_EQ(d->train.get({{u, i}}), 4.0f);
  // Keys do not depend on where the file is split.
  TripleOptions tail = options;
  tail.range = ReadRange{40, -1};
  auto part = load_triples<float>(ctx_, path, tail);
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  EXPECT_GE(part->users.index(string_id_key("007")), 0);
}

TEST_F(RatingFormatsTest, StringIdErrorsAreClear) {
  // Without string_ids, a string id says how to read it.
  auto plain = load_triples<float>(ctx_, Write("s.csv", "A3SG,B001,5\n"));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("s.csv:1: user id 'A3SG' is not an integer (for ids "
                                          "that are strings"),
            std::string::npos)
      << plain.status().message();
  TripleOptions options;
  options.string_ids = true;
  auto empty = load_triples<float>(ctx_, Write("e.csv", "A,B,5\n,B,3\n"), options);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("e.csv:2: empty user id"), std::string::npos)
      << empty.status().message();
  // Names read from a file other than the one loaded: an index without a string.
  const std::string loaded = Write("a.csv", "A,B,5\nC,B,3\n");
  auto d = load_triples<float>(ctx_, loaded, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto names = read_id_names(Write("changed.csv", "A,B,5\n"), options, d->users, d->items);
  ASSERT_FALSE(names.ok());
  EXPECT_NE(names.status().message().find("no user id has the key"), std::string::npos)
      << names.status().message();
}

// Two strings with one key (a pair found by a collision search on string_id_key): the load merges
// them (it keeps no strings), read_id_names names both, with the line of the second.
TEST_F(RatingFormatsTest, StringIdsSharingAKeyAreNamedByReadIdNames) {
  ASSERT_EQ(string_id_key("3865367f444cb8c5"), string_id_key("35a3f0b26dd252ba"));
  TripleOptions options;
  options.string_ids = true;
  const std::string path = Write("c.csv", "x,3865367f444cb8c5,5\ny,B,3\nz,35a3f0b26dd252ba,1\n");
  auto d = load_triples<float>(ctx_, path, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->items.size(), 2);  // merged
  auto names = read_id_names(path, options, d->users, d->items);
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(names.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(names.status().message().find("c.csv:3: item ids '3865367f444cb8c5' and "
                                          "'35a3f0b26dd252ba' have the same key"),
            std::string::npos)
      << names.status().message();
}

}  // namespace
}  // namespace tessera
