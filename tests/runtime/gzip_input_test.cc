// gzip-compressed input: every loader reads a .gz file as the text inside it, byte ranges apply to
// the decompressed text (so split loads work unchanged), and a damaged file is a clear error.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class GzipInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_gzip_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Plain(const std::string& name, const std::string& text) const {
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

std::string ManyRatings() {
  std::string text = "user,item,rating,time\n";
  for (int u = 1; u <= 300; ++u) {
    for (int i = u % 7; i < 40; i += 7)
      text += std::to_string(u) + "," + std::to_string(i * 3) + "," +
              std::to_string(1 + (u + i) % 5) + ",88125" + std::to_string(u) + "\n";
  }
  return text;
}

TEST_F(GzipInputTest, RatingsFromAGzipFileEqualThePlainOnes) {
  const std::string text = ManyRatings();
  auto plain = load_triples<float>(ctx_, Plain("r.csv", text));
  auto gz = load_triples<float>(ctx_, Gzip("r.csv.gz", text));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  ASSERT_EQ(gz->train.nnz(), plain->train.nnz());
  ASSERT_EQ(gz->users.size(), plain->users.size());
  for (int64_t p = 0; p < plain->train.nnz(); ++p) {
    EXPECT_EQ(gz->train.key_at(p), plain->train.key_at(p));
    EXPECT_EQ(gz->train.value_at(p), plain->train.value_at(p));
  }
}

// Any split of the decompressed bytes reads every line exactly once, as for a plain file.
TEST_F(GzipInputTest, ByteRangesSplitTheDecompressedText) {
  std::string text = "3\n50\n";
  std::string entries;
  int nnz = 0;
  for (int d = 1; d <= 3; ++d) {
    for (int w = d; w <= 50; w += 2) {
      entries +=
          std::to_string(d) + " " + std::to_string(w) + " " + std::to_string(w % 4 + 1) + "\n";
      ++nnz;
    }
  }
  text += std::to_string(nnz) + "\n" + entries;
  const std::string gz = Gzip("docword.txt.gz", text);
  const int64_t size = static_cast<int64_t>(text.size());
  for (int64_t cut1 : {int64_t{1}, int64_t{7}, size / 3}) {
    for (int64_t cut2 : {size / 2, size - 3}) {
      int64_t entries_read = 0;
      for (ReadRange r : {ReadRange{0, cut1}, ReadRange{cut1, cut2}, ReadRange{cut2, -1}}) {
        DocwordOptions o;
        o.range = r;
        auto part = load_docword(ctx_, gz, o);
        ASSERT_TRUE(part.ok()) << part.status().ToString();
        entries_read += part->counts.nnz();
      }
      EXPECT_EQ(entries_read, nnz) << "cuts " << cut1 << " " << cut2;
    }
  }
  auto whole = load_docword(ctx_, gz);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->counts.nnz(), nnz);
}

TEST_F(GzipInputTest, DamagedGzipIsDataLoss) {
  const std::string gz = Gzip("r.gz", ManyRatings());
  std::ifstream in(gz, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = Plain("cut.gz", bytes.substr(0, bytes.size() / 2));
  auto d = load_triples<float>(ctx_, cut);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status().ToString();
  EXPECT_NE(d.status().message().find("cut.gz': corrupt gzip data"), std::string::npos)
      << d.status().ToString();
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x55;
  d = load_triples<float>(ctx_, Plain("flipped.gz", flipped));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("flipped.gz"), std::string::npos) << d.status().ToString();
}

}  // namespace
}  // namespace tessera
