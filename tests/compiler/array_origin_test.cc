// Origins: where the array a name denotes was created, recorded only when tessc can prove it
// (compiler/src/array_origin.h). Programs are written to a temp file and analysed with the real
// <tessera/tessera.h>.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tessera/compiler/analyzer.h"

namespace tessera::compiler {
namespace {

// Analyses `program` (a whole translation unit) and returns the arrays of its first site.
std::vector<ArrayInfo> SiteArrays(const std::string& program) {
  char path[] = "/tmp/tessc_origin_testXXXXXX.cc";
  int fd = mkstemps(path, 3);
  EXPECT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << program;
  }
  AnalyzerOptions options;
  options.sources = {path};
  options.have_fixed_args = true;
  options.fixed_args = {"-std=c++20", "-I" TESSERA_SOURCE_DIR "/runtime/include",
                        "-I" TESSERA_SOURCE_DIR "/common/include"};
  Result<AnalysisResult> r = Analyze(options);
  std::remove(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok() || r->sites.empty()) return {};
  return r->sites[0].model.arrays;
}

const ArrayInfo* Named(const std::vector<ArrayInfo>& arrays, const std::string& name) {
  for (const ArrayInfo& a : arrays) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

constexpr const char* kPrologue =
    "#include <tessera/tessera.h>\n"                                                      // 1
    "#include <utility>\n"                                                                // 2
    "void Touch(tessera::DistArray<float, 1>& a);\n"                                      // 3
    "void Look(const tessera::DistArray<float, 1>& a);\n"                                 // 4
    "int main(int argc, char** argv) {\n"                                                 // 5
    "  tessera::Context ctx(argc, argv);\n"                                               // 6
    "  auto space = tessera::DistArray<float, 1>::sparse(ctx, {10});\n";                  // 7

TEST(ArrayOriginTest, FactoryCreatedArraysUsedInPlaceHaveTheirCallAsOrigin) {
  const std::string program = std::string(kPrologue) +
      "  auto W = tessera::DistArray<float, 1>::random(ctx, {10}, 1, 0.0f, 1.0f);\n"      // 8
      "  auto totals = tessera::RelaxedArray<int64_t, 1>::dense(ctx, {10}, 1);\n"        // 9
      "  Look(W);\n"
      "  W(3) = 1.0f;\n"
      "  tessera::parallel_for(space, [&](const tessera::Key<1>& k, float& v) {\n"
      "    W(k[0]) += v;\n"
      "    totals.add(k[0], 1);\n"
      "  });\n"
      "}\n";
  const auto arrays = SiteArrays(program);
  const ArrayInfo* w = Named(arrays, "W");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->origin.has_value()) << w->origin_unknown;
  EXPECT_EQ(w->origin->line, 8u);
  EXPECT_EQ(w->origin->member, "");
  EXPECT_NE(w->origin->file.find("tessc_origin_test"), std::string::npos);
  const ArrayInfo* totals = Named(arrays, "totals");
  ASSERT_NE(totals, nullptr);
  ASSERT_TRUE(totals->origin.has_value()) << totals->origin_unknown;
  EXPECT_EQ(totals->origin->line, 9u);
}

// Each of these may leave the name holding another array (or none) when the loop runs.
TEST(ArrayOriginTest, UsesThatMayMoveTheStorageLeaveNoOrigin) {
  const char* kUses[] = {
      "  W = tessera::DistArray<float, 1>::dense(ctx, {10});\n",
      "  auto X = std::move(W);\n",
      "  std::swap(W, V);\n",
      "  Touch(W);\n",
      "  auto* p = &W; (void)p;\n",
      "  auto& r = W; (void)r;\n",
  };
  for (const char* use : kUses) {
    const std::string program = std::string(kPrologue) +
        "  auto W = tessera::DistArray<float, 1>::dense(ctx, {10});\n"
        "  auto V = tessera::DistArray<float, 1>::dense(ctx, {10});\n" + use +
        // Reads by get (never inserting): the site stays parallel even where W may be replaced.
        "  tessera::parallel_for(space, [&](const tessera::Key<1>& k, float& v) {\n"
        "    v += W.get(k) + V.get(k);\n"
        "  });\n"
        "}\n";
    const auto arrays = SiteArrays(program);
    const ArrayInfo* w = Named(arrays, "W");
    ASSERT_NE(w, nullptr) << use;
    EXPECT_FALSE(w->origin.has_value()) << use;
    EXPECT_NE(w->origin_unknown.find("may move its storage"), std::string::npos)
        << use << ": " << w->origin_unknown;
  }
}

TEST(ArrayOriginTest, ParametersAndNonFactoryInitializersHaveNoOrigin) {
  const std::string program =
      "#include <tessera/tessera.h>\n"
      "tessera::DistArray<float, 2> Make(tessera::Context& ctx) {\n"
      "  return tessera::DistArray<float, 2>::dense(ctx, {10, 2});\n"
      "}\n"
      "void Train(tessera::DistArray<float, 1>& space, tessera::DistArray<float, 2>& P,\n"
      "           tessera::Context& ctx) {\n"
      "  auto M = Make(ctx);\n"
      "  // Rows (dense only), not lookups by key, which need arrays tessc can prove dense.\n"
      "  tessera::parallel_for(space, [&](const tessera::Key<1>& k, float& v) {\n"
      "    P.row(k[0])[0] += v;\n"
      "    M.row(k[0])[0] += v;\n"
      "  });\n"
      "}\n";
  const auto arrays = SiteArrays(program);
  const ArrayInfo* p = Named(arrays, "P");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->origin.has_value());
  EXPECT_NE(p->origin_unknown.find("parameter"), std::string::npos) << p->origin_unknown;
  const ArrayInfo* m = Named(arrays, "M");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->origin.has_value());
  EXPECT_NE(m->origin_unknown.find("factory"), std::string::npos) << m->origin_unknown;
}

// loop_only: no code outside parallel_for bodies touches the array.
TEST(ArrayOriginTest, ArraysTouchedOnlyInLoopBodiesAreLoopOnly) {
  const std::string program = std::string(kPrologue) +
      "  auto A = tessera::DistArray<float, 1>::dense(ctx, {10});\n"       // 8: direct body
      "  auto B = tessera::DistArray<float, 1>::dense(ctx, {10});\n"       // 9: body in a variable
      "  auto C = tessera::DistArray<float, 1>::dense(ctx, {10});\n"       // 10: read in serial code
      "  auto D = tessera::DistArray<float, 1>::dense(ctx, {10});\n"       // 11: in a lambda called here
      "  auto body = [&](const tessera::Key<1>& k, float& v) { B(k[0]) += v; };\n"
      "  auto helper = [&](int64_t i) { D(i) = 1.0f; };\n"
      "  helper(0);\n"
      "  float c0 = C(0); (void)c0;\n"
      "  for (int e = 0; e < 2; ++e) {\n"
      "    tessera::parallel_for(space, [&](const tessera::Key<1>& k, float& v) {\n"
      "      auto twice = [](float x) { return 2 * x; };\n"
      "      A(k[0]) += twice(v);\n"
      "      C(k[0]) += v;\n"
      "      D(k[0]) += v;\n"
      "    });\n"
      "    tessera::parallel_for(space, body);\n"
      "  }\n"
      "}\n";
  const auto arrays = SiteArrays(program);
  const ArrayInfo* a = Named(arrays, "A");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->loop_only) << a->serial_use;
  // One element read by code every worker runs: the runtime fetches its row (a collective).
  const ArrayInfo* c = Named(arrays, "C");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->loop_only) << c->serial_use;
  EXPECT_EQ(c->serial_access, "line 15");
  EXPECT_TRUE(a->serial_access.empty()) << a->serial_access;
  // In a lambda, the access may run anywhere, a loop body included.
  const ArrayInfo* d = Named(arrays, "D");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->loop_only);
  EXPECT_EQ(d->serial_use, "line 13");
  EXPECT_TRUE(d->serial_access.empty()) << d->serial_access;
}

// What tessc records for C, a dense array that `code` (from line 10) uses outside loops and one
// loop then updates.
std::optional<ArrayInfo> ArrayCWith(const std::string& code) {
  const std::string program = std::string("#include <cstdio>\n") + kPrologue +
      "  auto C = tessera::DistArray<float, 1>::dense(ctx, {10});\n" + code +
      "  tessera::parallel_for(space, [&](const tessera::Key<1>& k, float& v) { C(k[0]) += v; });\n"
      "}\n";
  const auto arrays = SiteArrays(program);
  const ArrayInfo* c = Named(arrays, "C");
  if (c == nullptr) return std::nullopt;
  return *c;
}

// Single elements read or written outside loops keep the array loop_only only where every worker
// makes the access and nothing keeps a reference to the element past it.
TEST(ArrayOriginTest, SerialElementAccessesThatEveryWorkerMakesKeepTheArrayLoopOnly) {
  const char* kAccesses[] = {
      "  float x = C(1) + C.get({{2}}) + C.at({{3}});\n  (void)x;\n",
      "  C(1) = 2.0f;\n  C(2) += C(3);\n  ++C(4);\n  C.at({{5}}) -= 1.0f;\n",
      "  for (int i = 0; i < 3; ++i) std::printf(\"%f\", C(i));\n",
  };
  for (const char* access : kAccesses) {
    const std::optional<ArrayInfo> c = ArrayCWith(access);
    ASSERT_TRUE(c.has_value()) << access;
    EXPECT_TRUE(c->loop_only) << access << c->serial_use;
    EXPECT_EQ(c->serial_access, "line 10") << access;
  }
}

TEST(ArrayOriginTest, SerialElementAccessesOnlySomeWorkersMakeOrThatKeepAReferenceAreSerialUses) {
  const char* kAccesses[] = {
      // Only worker 0 would fetch: not collective.
      "  if (ctx.job().rank == 0) C(1) = 2.0f;\n",
      "  const bool report = ctx.job().rank == 0;\n  float x = report ? C(1) : 0.0f; (void)x;\n",
      // A reference or pointer outlives the access: a later loop may move the row away.
      "  float& r = C(1); r = 2.0f;\n",
      "  const float& r = C(1); (void)r;\n",
      "  float* p = &C(1); (void)p;\n",
      // Positions and row views are not single keyed elements.
      "  float* d = C.data(); (void)d;\n",
  };
  for (const char* access : kAccesses) {
    const std::optional<ArrayInfo> c = ArrayCWith(access);
    ASSERT_TRUE(c.has_value()) << access;
    EXPECT_FALSE(c->loop_only) << access;
    EXPECT_FALSE(c->serial_use.empty()) << access;
  }
}

TEST(ArrayOriginTest, ABodyKeptInAVariableCountsAsALoopBody) {
  const std::string program = std::string(kPrologue) +
      "  auto B = tessera::DistArray<float, 1>::dense(ctx, {10});\n"
      "  auto E = tessera::DistArray<float, 1>::dense(ctx, {10});\n"
      "  auto body = [&](const tessera::Key<1>& k, float& v) { B(k[0]) += v; E(k[0]) += v; };\n"
      "  tessera::parallel_for(space, body);\n"
      "  tessera::parallel_for(space, body, tessera::DataParallel{.staleness = 1});\n"
      "  auto other = [&](const tessera::Key<1>& k, float& v) { E(k[0]) -= v; };\n"
      "  other(tessera::Key<1>{{0}}, *E.data());\n"
      "  tessera::parallel_for(space, other);\n"
      "}\n";
  const auto arrays = SiteArrays(program);
  const ArrayInfo* b = Named(arrays, "B");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->loop_only) << b->serial_use;
  const ArrayInfo* e = Named(arrays, "E");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->loop_only);  // `other` is also called outside a loop, and E.data() is serial
}

// A reference to a loader result's field has the loader's call as origin, with the field.
constexpr const char* kLoaderPrologue =
    "#include <tessera/tessera.h>\n"                                                     // 1
    "#include <utility>\n"                                                               // 2
    "int main(int argc, char** argv) {\n"                                                // 3
    "  tessera::Context ctx(argc, argv);\n"                                              // 4
    "  auto loaded = tessera::load_triples<float>(ctx, argv[1]);\n"                      // 5
    "  if (!loaded.ok()) return 1;\n"                                                   // 6
    "  auto W = tessera::DistArray<float, 1>::dense(ctx, {10});\n";                     // 7

std::string LoaderProgram(const std::string& between) {
  return std::string(kLoaderPrologue) +
      "  auto& ratings = loaded->train;\n" + between +
      "  tessera::parallel_for(ratings, [&](const tessera::Key<2>& k, float& v) {\n"
      "    W(k[0]) += v;\n"
      "  });\n"
      "  return 0;\n"
      "}\n";
}

TEST(ArrayOriginTest, ALoaderFieldHasTheLoaderCallAsOrigin) {
  const auto arrays = SiteArrays(LoaderProgram(
      "  int64_t n = ratings.nnz() + ratings.extent(0);\n"
      "  ratings.shuffle_blocks(1, {2, 2}, true);\n"
      "  (void)n; (void)loaded->users.size();\n"));
  const ArrayInfo* r = Named(arrays, "ratings");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->origin.has_value()) << r->origin_unknown;
  EXPECT_EQ(r->origin->line, 5u);
  EXPECT_EQ(r->origin->member, "train");
  // Counts, extents and reordering are answered by the runtime: still only loops see elements.
  EXPECT_TRUE(r->loop_only) << r->serial_use;
}

TEST(ArrayOriginTest, ALoaderFieldReadOutsideLoopsIsNotLoopOnly) {
  const char* kUses[] = {
      "  float f = ratings.value_at(0); (void)f;\n",
      "  float g = loaded->train.value_at(0); (void)g;\n",
  };
  for (const char* use : kUses) {
    const auto arrays = SiteArrays(LoaderProgram(use));
    const ArrayInfo* r = Named(arrays, "ratings");
    ASSERT_NE(r, nullptr) << use;
    ASSERT_TRUE(r->origin.has_value()) << use << ": " << r->origin_unknown;
    EXPECT_FALSE(r->loop_only) << use;
    EXPECT_EQ(r->serial_use, "line 9") << use;
  }
}

TEST(ArrayOriginTest, ALoaderFieldThatMayMoveHasNoOrigin) {
  const char* kUses[] = {
      "  auto moved = std::move(loaded->train);\n",
      "  auto whole = std::move(*loaded);\n",
      "  auto& again = loaded->train; (void)again;\n",
  };
  for (const char* use : kUses) {
    const auto arrays = SiteArrays(LoaderProgram(use));
    const ArrayInfo* r = Named(arrays, "ratings");
    ASSERT_NE(r, nullptr) << use;
    EXPECT_FALSE(r->origin.has_value()) << use;
  }
}

// One field of two results: tessc knows arrays in a body by declaration, so both names are one
// array to it, which must then be bound to neither result.
TEST(ArrayOriginTest, OneFieldOfTwoLoaderResultsInABodyHasNoOrigin) {
  const std::string program = std::string(kLoaderPrologue) +
      "  auto other = tessera::load_triples<float>(ctx, argv[2]);\n"
      "  auto& ratings = loaded->train;\n"
      "  auto& second = other->train;\n"
      "  tessera::parallel_for(ratings, [&](const tessera::Key<2>& k, float& v) {\n"
      "    W(k[0]) += v + second.get(k);\n"
      "  });\n"
      "  return 0;\n"
      "}\n";
  const auto arrays = SiteArrays(program);
  for (const ArrayInfo& a : arrays) {
    if (a.name == "ratings" || a.name == "second") {
      EXPECT_FALSE(a.origin.has_value()) << a.name;
    }
  }
}

}  // namespace
}  // namespace tessera::compiler
