// Unit tests of the Clang front end's subscript extraction: small loop bodies written to a temp
// file, analysed with the real <tessera/tessera.h>, and the resulting Access subscripts checked.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tessera/compiler/analyzer.h"

namespace tessera::compiler {
namespace {

// Wraps `body` in a program with arrays A (float, 2-D), B (float, 1-D), a loop-invariant n, and a
// parallel_for over the 2-D `space`, then analyses it.
AnalysisResult AnalyzeBody(const std::string& body) {
  char path[] = "/tmp/tessc_frontend_testXXXXXX.cc";
  int fd = mkstemps(path, 3);
  EXPECT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << "#include <tessera/tessera.h>\n"
           "int main(int argc, char** argv) {\n"
           "  tessera::Context ctx(argc, argv);\n"
           "  const int64_t n = argc + 10;\n"
           "  auto space = tessera::DistArray<float, 2>::sparse(ctx, {10, 10});\n"
           "  auto A = tessera::DistArray<float, 2>::dense(ctx, {100, 100});\n"
           "  auto B = tessera::DistArray<float, 1>::dense(ctx, {100});\n"
           "  tessera::parallel_for(space, [&](const tessera::Key<2>& key, float& v) {\n"
        << body
        << "\n  });\n"
           "}\n";
  }
  AnalyzerOptions options;
  options.sources = {path};
  options.have_fixed_args = true;
  options.fixed_args = {"-std=c++20", "-I" TESSERA_SOURCE_DIR "/runtime/include",
                        "-I" TESSERA_SOURCE_DIR "/common/include"};
  Result<AnalysisResult> r = Analyze(options);
  std::remove(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : AnalysisResult{};
}

// The accesses to the array called `name` in the first site.
std::vector<Access> AccessesTo(const AnalysisResult& r, const std::string& name) {
  std::vector<Access> out;
  if (r.sites.empty()) return out;
  const SiteModel& m = r.sites[0].model;
  for (const Access& a : m.accesses) {
    if (m.arrays[a.array].name == name) out.push_back(a);
  }
  return out;
}

TEST(FrontendTest, SubscriptKeepsCoefficientsSignsConstantsAndSymbols) {
  AnalysisResult r = AnalyzeBody("    v = B(3 * key[1] - key[0] + n - 2);");
  ASSERT_TRUE(r.ok);
  auto b = AccessesTo(r, "B");
  ASSERT_EQ(b.size(), 1u);
  const Affine& s = b[0].subscripts[0];
  ASSERT_TRUE(s.known());
  EXPECT_EQ(s.key_coeff(0), -1);
  EXPECT_EQ(s.key_coeff(1), 3);
  EXPECT_EQ(s.constant(), -2);
  ASSERT_EQ(s.symbols().size(), 1u);
  EXPECT_EQ(s.symbols().begin()->first.substr(0, 2), "n@");
  EXPECT_TRUE(b[0].read);
  EXPECT_FALSE(b[0].write);
}

TEST(FrontendTest, KeyComponentsCopiedToLocalsAreFollowed) {
  AnalysisResult r = AnalyzeBody(
      "    const int64_t u = key[0];\n"
      "    const int64_t next = u + 1;\n"
      "    A(next, key[1]) += v;");
  ASSERT_TRUE(r.ok);
  auto a = AccessesTo(r, "A");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].subscripts[0].ToString(), "key[0] + 1");
  EXPECT_EQ(a[0].subscripts[1].ToString(), "key[1]");
  EXPECT_TRUE(a[0].additive);
}

TEST(FrontendTest, InnerLoopVariablesAreUnknown) {
  AnalysisResult r = AnalyzeBody("    for (int64_t j = 0; j < 4; ++j) A(key[0], j) *= 2;");
  ASSERT_TRUE(r.ok);
  auto a = AccessesTo(r, "A");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].subscripts[0].ToString(), "key[0]");
  EXPECT_FALSE(a[0].subscripts[1].known());
  EXPECT_EQ(r.sites[0].decision.schedule->strategy, Strategy::k1D);
}

TEST(FrontendTest, SubscriptsReadFromDataAreUnknown) {
  // B is written at an index read from the element: any two iterations may collide, no schedule
  // (the site errors, so the result carries no schedule for it).
  AnalysisResult r = AnalyzeBody("    B(static_cast<int64_t>(v)) = 1;");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.sites_total, 1);
  EXPECT_TRUE(r.sites.empty());
}

TEST(FrontendTest, ModesOfRowViewAccesses) {
  AnalysisResult r = AnalyzeBody(
      "    auto row = A.row(key[0]);\n"
      "    row[0] = v;\n"
      "    row[1] += v;\n"
      "    row[2] *= v;\n"
      "    float x = row[3];\n"
      "    (void)x;");
  ASSERT_TRUE(r.ok);
  auto a = AccessesTo(r, "A");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_TRUE(a[0].write && !a[0].read && !a[0].additive);
  EXPECT_TRUE(a[1].write && a[1].read && a[1].additive);
  EXPECT_TRUE(a[2].write && a[2].read && !a[2].additive);
  EXPECT_TRUE(a[3].read && !a[3].write);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a[i].subscripts[0].ToString(), "key[0]");
    EXPECT_EQ(a[i].subscripts[1].ToString(), std::to_string(i));
  }
}

TEST(FrontendTest, ElementParameterIsTheSpaceAtTheKey) {
  AnalysisResult r = AnalyzeBody("    v *= 2;");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.sites.size(), 1u);
  auto s = AccessesTo(r, "space");
  ASSERT_EQ(s.size(), 2u);  // the loop's own read, and the update through v
  EXPECT_TRUE(s[1].write);
  EXPECT_EQ(s[1].subscripts[0].ToString(), "key[0]");
  EXPECT_EQ(s[1].subscripts[1].ToString(), "key[1]");
  EXPECT_EQ(r.sites[0].decision.schedule->strategy, Strategy::kIndependent);
}

}  // namespace
}  // namespace tessera::compiler
