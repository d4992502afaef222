// save_array / load_array / save_array_text: round trips of every element type and layout, the
// documented byte layout, and a clear Status for every kind of bad file.
#include "tessera/array_io.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class ArrayIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tessera_array_io_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static void Spit(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  // Rewrites the trailing CRC so that a deliberately inconsistent file passes the checksum.
  static void Reseal(std::string* bytes) {
    const uint32_t crc = static_cast<uint32_t>(crc32(
        0, reinterpret_cast<const Bytef*>(bytes->data()), static_cast<uInt>(bytes->size() - 4)));
    std::memcpy(bytes->data() + bytes->size() - 4, &crc, 4);
  }
  static ContextOptions Hermetic() {
    ContextOptions o;
    o.read_environment = false;
    return o;
  }

  fs::path dir_;
  Context ctx_{Hermetic()};
};

TEST_F(ArrayIoTest, DenseFloatMatrixRoundTripsBitForBit) {
  auto W = DistArray<float, 2>::random(ctx_, {37, 5}, 7, -1.0f, 1.0f);
  ASSERT_TRUE(save_array(W, Path("W.tarr")).ok());
  auto back = load_array<float, 2>(ctx_, Path("W.tarr"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_FALSE(back->is_sparse());
  ASSERT_EQ(back->extent(0), 37);
  ASSERT_EQ(back->extent(1), 5);
  EXPECT_EQ(std::memcmp(back->data(), W.data(), 37 * 5 * sizeof(float)), 0);
  EXPECT_FALSE(fs::exists(Path("W.tarr.tmp")));
}

TEST_F(ArrayIoTest, EveryElementTypeAndRankRoundTrips) {
  auto a = DistArray<int32_t, 1>::random(ctx_, {11}, 1, -1000, 1000);
  auto b = DistArray<int64_t, 3>::random(ctx_, {2, 3, 4}, 2, -(int64_t{1} << 40), int64_t{1} << 40);
  auto c = DistArray<double, 1>::random(ctx_, {9}, 3, -1e300, 1e300);
  ASSERT_TRUE(save_array(a, Path("a")).ok());
  ASSERT_TRUE(save_array(b, Path("b")).ok());
  ASSERT_TRUE(save_array(c, Path("c")).ok());
  auto a2 = load_array<int32_t, 1>(ctx_, Path("a"));
  auto b2 = load_array<int64_t, 3>(ctx_, Path("b"));
  auto c2 = load_array<double, 1>(ctx_, Path("c"));
  ASSERT_TRUE(a2.ok() && b2.ok() && c2.ok());
  for (int64_t i = 0; i < 11; ++i) EXPECT_EQ(a2->get({{i}}), a.get({{i}}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ((*b2)(i, j, k), b(i, j, k));
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(c2->get({{i}}), c.get({{i}}));
}

TEST_F(ArrayIoTest, SparseArrayKeepsItsKeysValuesAndOrder) {
  auto s = DistArray<int32_t, 2>::sparse(ctx_, {100, 50});
  s.insert({{99, 0}}, 3);
  s.insert({{0, 49}}, -7);
  s.insert({{42, 17}}, 1 << 30);
  ASSERT_TRUE(save_array(s, Path("s")).ok());
  auto back = load_array<int32_t, 2>(ctx_, Path("s"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->is_sparse());
  ASSERT_EQ(back->nnz(), 3);
  EXPECT_EQ(back->extent(0), 100);
  EXPECT_EQ(back->extent(1), 50);
  for (int64_t p = 0; p < 3; ++p) {
    EXPECT_EQ(back->key_at(p), s.key_at(p));
    EXPECT_EQ(back->value_at(p), s.value_at(p));
  }
  EXPECT_EQ(back->get({{42, 17}}), 1 << 30);

  auto empty = DistArray<float, 2>::sparse(ctx_, {3, 3});
  ASSERT_TRUE(save_array(empty, Path("e")).ok());
  auto e2 = load_array<float, 2>(ctx_, Path("e"));
  ASSERT_TRUE(e2.ok()) << e2.status().ToString();
  EXPECT_EQ(e2->nnz(), 0);
  EXPECT_EQ(e2->extent(1), 3);
}

// The layout docs/array-format.md documents, byte by byte.
TEST_F(ArrayIoTest, FileLayoutIsTheDocumentedOne) {
  auto v = DistArray<float, 1>::filled(ctx_, {2}, 1.5f);
  ASSERT_TRUE(save_array(v, Path("v")).ok());
  const std::string bytes = Slurp(Path("v"));
  ASSERT_EQ(bytes.size(), 16u + 8 + 8 + 2 * 4 + 4);
  EXPECT_EQ(bytes.substr(0, 8), std::string("TESSARR\0", 8));
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  EXPECT_EQ(version, 1u);
  EXPECT_EQ(bytes[12], 3);  // float32
  EXPECT_EQ(bytes[13], 1);  // rank
  EXPECT_EQ(bytes[14], 0);  // dense
  int64_t extent, count;
  std::memcpy(&extent, bytes.data() + 16, 8);
  std::memcpy(&count, bytes.data() + 24, 8);
  EXPECT_EQ(extent, 2);
  EXPECT_EQ(count, 2);
  float x;
  std::memcpy(&x, bytes.data() + 36, 4);
  EXPECT_EQ(x, 1.5f);
  uint32_t crc;
  std::memcpy(&crc, bytes.data() + bytes.size() - 4, 4);
  EXPECT_EQ(crc, crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
}

TEST_F(ArrayIoTest, TextExportWritesRowsAndKeyedLines) {
  auto m = DistArray<float, 2>::dense(ctx_, {2, 3});
  m(0, 0) = 0.1f;
  m(0, 2) = -2.0f;
  m(1, 1) = 1e-7f;
  ASSERT_TRUE(save_array_text(m, Path("m.txt")).ok());
  EXPECT_EQ(Slurp(Path("m.txt")), "0.1 0 -2\n0 1e-07 0\n");
  auto col = DistArray<int64_t, 1>::filled(ctx_, {2}, 5);
  ASSERT_TRUE(save_array_text(col, Path("c.txt")).ok());
  EXPECT_EQ(Slurp(Path("c.txt")), "5\n5\n");
  auto s = DistArray<double, 2>::sparse(ctx_, {4, 4});
  s.insert({{3, 1}}, 0.25);
  s.insert({{0, 2}}, 2.0);
  ASSERT_TRUE(save_array_text(s, Path("s.txt")).ok());
  EXPECT_EQ(Slurp(Path("s.txt")), "3 1 0.25\n0 2 2\n");
  auto cube = DistArray<int32_t, 3>::dense(ctx_, {1, 2, 1});
  cube(0, 1, 0) = 9;
  ASSERT_TRUE(save_array_text(cube, Path("cube.txt")).ok());
  EXPECT_EQ(Slurp(Path("cube.txt")), "0 0 0 0\n0 1 0 9\n");
}

TEST_F(ArrayIoTest, WriteErrorsNameTheFile) {
  auto a = DistArray<float, 1>::dense(ctx_, {3});
  Status s = save_array(a, Path("no/such/dir/a.tarr"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("no/such/dir/a.tarr"), std::string::npos) << s.ToString();
  fs::create_directories(Path("adir"));
  s = save_array(a, Path("adir"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("directory"), std::string::npos) << s.ToString();
  s = save_array_text(a, Path("adir"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST_F(ArrayIoTest, EveryKindOfBadFileIsAClearError) {
  auto W = DistArray<float, 2>::filled(ctx_, {4, 3}, 2.0f);
  ASSERT_TRUE(save_array(W, Path("W")).ok());
  const std::string good = Slurp(Path("W"));
  auto load = [&](const std::string& bytes) {
    Spit(Path("bad"), bytes);
    return load_array<float, 2>(ctx_, Path("bad")).status();
  };
  auto expect = [](const Status& s, StatusCode code, const std::string& words) {
    EXPECT_EQ(s.code(), code) << s.ToString();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.ToString();
  };
  expect(load_array<float, 2>(ctx_, Path("missing")).status(), StatusCode::kNotFound, "missing");
  expect(load_array<float, 2>(ctx_, dir_.string()).status(), StatusCode::kInvalidArgument,
         "directory");
  expect(load("user item rating\n1 2 3\n"), StatusCode::kInvalidArgument, "not a Tessera array");
  expect(load(""), StatusCode::kInvalidArgument, "not a Tessera array");
  expect(load(good.substr(0, 12)), StatusCode::kDataLoss, "truncated");
  expect(load(good.substr(0, good.size() - 1)), StatusCode::kDataLoss, "truncated");
  expect(load(good + "x"), StatusCode::kDataLoss, "trailing");
  std::string flipped = good;
  flipped[40] ^= 0x10;  // a value byte
  expect(load(flipped), StatusCode::kDataLoss, "checksum");
  std::string v2 = good;
  v2[8] = 2;
  expect(load(v2), StatusCode::kInvalidArgument, "version 2");
  std::string huge = good;
  huge[16 + 7] = 0x40;  // extent 0 becomes enormous
  expect(load(huge), StatusCode::kDataLoss, "corrupt header");
  expect(load_array<double, 2>(ctx_, Path("W")).status(), StatusCode::kInvalidArgument,
         "rank-2 array of float32; expected a rank-2 array of float64");
  expect(load_array<float, 1>(ctx_, Path("W")).status(), StatusCode::kInvalidArgument,
         "expected a rank-1");

  // Sparse files whose keys are out of range or repeated, with a valid checksum.
  auto s = DistArray<int32_t, 2>::sparse(ctx_, {5, 5});
  s.insert({{1, 1}}, 1);
  s.insert({{2, 2}}, 2);
  ASSERT_TRUE(save_array(s, Path("s")).ok());
  const std::string sparse = Slurp(Path("s"));
  const size_t keys_at = 16 + 2 * 8 + 8;
  std::string out_of_range = sparse;
  const int64_t five = 5;
  std::memcpy(out_of_range.data() + keys_at, &five, 8);
  Reseal(&out_of_range);
  Spit(Path("bad"), out_of_range);
  expect(load_array<int32_t, 2>(ctx_, Path("bad")).status(), StatusCode::kInvalidArgument,
         "outside [0, 5)");
  std::string repeated = sparse;
  std::memcpy(repeated.data() + keys_at + 16, repeated.data() + keys_at, 16);
  Reseal(&repeated);
  Spit(Path("bad"), repeated);
  expect(load_array<int32_t, 2>(ctx_, Path("bad")).status(), StatusCode::kInvalidArgument,
         "stored twice");
}

}  // namespace
}  // namespace tessera
