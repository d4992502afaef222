// Binding tessc's array names to live arrays by where they were created (schedule/array_binding.h).
#include "schedule/array_binding.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "schedule/loop_schedule.h"
#include "tessera/tessera.h"

namespace tessera::internal {
namespace {

// A site entry for an array named `name` that tessc says was created at (file, line).
std::string ArrayJson(const std::string& name, const std::string& file, unsigned line, int bytes,
                      int rank, const std::string& kind = "dist_array") {
  std::string origin = line == 0 ? "null"
                                 : "{\"file\": \"" + file + "\", \"line\": " + std::to_string(line) +
                                       ", \"column\": 0, \"member\": \"\"}";
  return "{\"name\": \"" + name + "\", \"placement\": \"local\", \"kind\": \"" + kind +
         "\", \"element_bytes\": " + std::to_string(bytes) + ", \"rank\": " + std::to_string(rank) +
         ", \"array_dim\": 0, \"key_dim\": 0, \"halo\": [0, 0], \"read\": true, \"write\": true, "
         "\"origin\": " + origin +
         (line == 0 ? ", \"origin_unknown\": \"it is a function parameter\"" : "") + "}";
}

LoopSchedule Schedule(const std::vector<std::string>& arrays) {
  std::string json =
      "{\"version\": 1, \"space\": {\"rank\": 2}, \"strategy\": \"1d\", \"space_dim\": 0, "
      "\"arrays\": [";
  for (size_t i = 0; i < arrays.size(); ++i) json += (i > 0 ? ", " : "") + arrays[i];
  json += "]}";
  Result<LoopSchedule> s = ParseLoopSchedule(json);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

TEST(ArrayBindingTest, NamesBindToTheArraysCreatedWhereTesseraSaysAndTheSpaceAlways) {
  ContextOptions options;
  options.read_environment = false;
  Context ctx(std::move(options));
  const std::string file = __FILE__;
  auto space = DistArray<float, 2>::sparse(ctx, {4, 4});
  const unsigned w_line = __LINE__ + 1;
  auto W = DistArray<float, 2>::dense(ctx, {4, 3});
  const unsigned b_line = __LINE__ + 1;
  auto bias = DistArray<double, 1>::dense(ctx, {4});

  const LoopSchedule s = Schedule({ArrayJson("ratings", "", 0, 4, 2), ArrayJson("W", file, w_line, 4, 2),
                                   ArrayJson("bias", file, b_line, 8, 1)});
  const SiteBinding b = BindArrays(s, space.base(), ctx.arrays());
  ASSERT_EQ(b.arrays.size(), 3u);
  EXPECT_EQ(b.arrays[0], &space.base());
  EXPECT_EQ(b.arrays[1], &W.base());
  EXPECT_EQ(b.arrays[2], &bias.base());
  EXPECT_TRUE(b.complete(s));
  EXPECT_EQ(b.IndexOf(&bias.base()), 2);
}

TEST(ArrayBindingTest, FileNamesMatchBySuffixAsScheduleLookupsDo) {
  ContextOptions options;
  options.read_environment = false;
  Context ctx(std::move(options));
  auto space = DistArray<float, 2>::sparse(ctx, {4, 4});
  const unsigned line = __LINE__ + 1;
  auto W = DistArray<float, 2>::dense(ctx, {4, 3});
  std::string file = __FILE__;
  file = file.substr(file.find("tests/"));  // "tests/runtime/array_binding_test.cc"
  const LoopSchedule s = Schedule({ArrayJson("space", "", 0, 4, 2), ArrayJson("W", file, line, 4, 2)});
  EXPECT_EQ(BindArrays(s, space.base(), ctx.arrays()).arrays[1], &W.base());
  const LoopSchedule other =
      Schedule({ArrayJson("space", "", 0, 4, 2), ArrayJson("W", "other_test.cc", line, 4, 2)});
  EXPECT_EQ(BindArrays(other, space.base(), ctx.arrays()).arrays[1], nullptr);
}

TEST(ArrayBindingTest, AnythingButExactlyOneMatchingArrayLeavesTheNameUnboundWithAReason) {
  ContextOptions options;
  options.read_environment = false;
  Context ctx(std::move(options));
  const std::string file = __FILE__;
  auto space = DistArray<float, 2>::sparse(ctx, {4, 4});
  // Two live arrays from one creation site (a loop, or a helper called twice).
  std::vector<DistArray<float, 2>> twins;
  const unsigned twin_line = __LINE__ + 1;
  for (int i = 0; i < 2; ++i) twins.push_back(DistArray<float, 2>::dense(ctx, {4, 3}));
  const unsigned w_line = __LINE__ + 1;
  auto W = DistArray<float, 2>::dense(ctx, {4, 3});

  const LoopSchedule s = Schedule({
      ArrayJson("space", "", 0, 4, 2),
      ArrayJson("twin", file, twin_line, 4, 2),          // two candidates
      ArrayJson("gone", file, w_line + 1000, 4, 2),      // no array created there
      ArrayJson("W_as_double", file, w_line, 8, 2),      // element size disagrees
      ArrayJson("W_as_vector", file, w_line, 4, 1),      // rank disagrees
      ArrayJson("param", file, 0, 4, 2),                 // tessc found no origin
      ArrayJson("alias", file, w_line, 4, 2, "may_alias"),
  });
  const SiteBinding b = BindArrays(s, space.base(), ctx.arrays());
  EXPECT_FALSE(b.complete(s));
  for (size_t i = 1; i < b.arrays.size(); ++i) {
    EXPECT_EQ(b.arrays[i], nullptr) << s.arrays[i].name;
    EXPECT_FALSE(b.why_unbound[i].empty()) << s.arrays[i].name;
  }
  EXPECT_NE(b.why_unbound[1].find("2 live arrays"), std::string::npos) << b.why_unbound[1];
  EXPECT_NE(b.why_unbound[2].find("no live array"), std::string::npos) << b.why_unbound[2];
  EXPECT_NE(b.why_unbound[3].find("8-byte"), std::string::npos) << b.why_unbound[3];
  EXPECT_NE(b.why_unbound[4].find("rank 1"), std::string::npos) << b.why_unbound[4];
  EXPECT_NE(b.why_unbound[5].find("function parameter"), std::string::npos) << b.why_unbound[5];
  EXPECT_NE(b.why_unbound[6].find("may be any array"), std::string::npos) << b.why_unbound[6];
}

TEST(ArrayBindingTest, LoadersRecordTheirCallAndTheFieldOfTheirResult) {
  ContextOptions options;
  options.read_environment = false;
  Context ctx(std::move(options));
  const std::string path = ::testing::TempDir() + "array_binding_ratings.txt";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("1 1 4\n1 2 3\n2 1 5\n", f);
    std::fclose(f);
  }
  const unsigned line = __LINE__ + 1;
  auto data = load_triples<float>(ctx, path);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->train.base().origin().line, line);
  EXPECT_STREQ(data->train.base().origin().member, "train");
  EXPECT_STREQ(data->test.base().origin().member, "test");
  EXPECT_NE(std::string(data->train.base().origin().file).find("array_binding_test.cc"),
            std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera::internal
