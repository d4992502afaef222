// Unit tests of the subscript model and the dependence test.
#include "tessera/compiler/dependence.h"

#include <gtest/gtest.h>

#include "tessera/compiler/affine.h"

namespace tessera::compiler {
namespace {

Affine K(int rank, int dim) { return Affine::KeyComponent(rank, dim); }
Affine C(int rank, int64_t c) { return Affine::Constant(rank, c); }
Affine Sym(int rank, const char* id) { return Affine::Symbol(rank, id); }
Affine U() { return Affine::Unknown(); }

TEST(AffineTest, ArithmeticKeepsCoefficientsSignsAndConstants) {
  Affine a = Sym(2, "n@1") - K(2, 0) + C(2, 3);
  ASSERT_TRUE(a.known());
  EXPECT_EQ(a.key_coeff(0), -1);
  EXPECT_EQ(a.key_coeff(1), 0);
  EXPECT_EQ(a.constant(), 3);
  EXPECT_EQ(a.symbols().at("n@1"), 1);
  EXPECT_EQ(a.ToString(), "-key[0] + n + 3");
  EXPECT_EQ((K(2, 1).Scaled(2) - C(2, 1)).ToString(), "2*key[1] - 1");
}

TEST(AffineTest, UnknownIsContagious) {
  EXPECT_FALSE((K(1, 0) + Affine::Unknown()).known());
  EXPECT_FALSE(Affine::Unknown().Scaled(3).known());
  EXPECT_EQ(Affine::Unknown().ToString(), "?");
}

TEST(AffineTest, SymbolsCancel) {
  Affine a = Sym(1, "n@1") - Sym(1, "n@1");
  EXPECT_TRUE(a.IsConstant());
  EXPECT_EQ(a.ToString(), "0");
}

TEST(AffineTest, OverflowBecomesUnknown) {
  Affine big = C(1, INT64_MAX);
  EXPECT_FALSE((big + C(1, 1)).known());
  EXPECT_FALSE(big.Scaled(2).known());
}

TEST(AffineTest, SingleKeyDim) {
  EXPECT_EQ((K(2, 1) + C(2, -1)).SingleKeyDim(), 1);
  EXPECT_FALSE(K(2, 1).Scaled(-1).SingleKeyDim().has_value());
  EXPECT_FALSE((K(2, 0) + K(2, 1)).SingleKeyDim().has_value());
  EXPECT_FALSE((K(2, 0) + Sym(2, "n@1")).SingleKeyDim().has_value());
}

TEST(DependenceTest, SameRowDifferentColumnsIsZeroStar) {
  // W(key[0], j) written by every iteration with the same key[0]: distance 0 along key[0], any
  // along key[1].
  auto v = ComputeDependence({K(2, 0), Affine::Unknown()}, {K(2, 0), Affine::Unknown()}, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(0, *)");
}

TEST(DependenceTest, IdentitySubscriptsOnlyMeetInOneIteration) {
  auto v = ComputeDependence({K(2, 0), K(2, 1)}, {K(2, 0), K(2, 1)}, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(IsZeroVector(*v));
}

TEST(DependenceTest, StencilOffsetsGiveConstantDistance) {
  // A(key[0]) vs A(key[0] - 1): key[0] = key'[0] - 1, so d = +1.
  auto v = ComputeDependence({K(1, 0)}, {K(1, 0) - C(1, 1)}, 1);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(1)");
  auto w = ComputeDependence({K(1, 0)}, {K(1, 0) + C(1, 1)}, 1);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(ToString(*w), "(-1)");
}

TEST(DependenceTest, NegativeCoefficientWithItselfIsZero) {
  Affine rev = Sym(1, "n@1") - K(1, 0);
  auto v = ComputeDependence({rev}, {rev}, 1);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(IsZeroVector(*v));
  // n - key[0] vs n - key[0] - 1 (read one to the right of the reversed index): k' = k - 1.
  auto w = ComputeDependence({rev}, {rev - C(1, 1)}, 1);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(ToString(*w), "(-1)");
}

TEST(DependenceTest, NonUniformPairIsStar) {
  // A(key[0]) vs A(n - key[0]): the distance depends on the iteration.
  auto v = ComputeDependence({K(1, 0)}, {Sym(1, "n@1") - K(1, 0)}, 1);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(*)");
}

TEST(DependenceTest, DifferentInvariantOffsetsIsStar) {
  auto v = ComputeDependence({K(1, 0) + Sym(1, "n@1")}, {K(1, 0) + Sym(1, "m@2")}, 1);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(*)");
}

TEST(DependenceTest, DistinctConstantsNeverMeet) {
  EXPECT_FALSE(ComputeDependence({C(1, 0)}, {C(1, 1)}, 1).has_value());
  // 2*key[0] vs 2*key[0] + 1: parity differs.
  EXPECT_FALSE(
      ComputeDependence({K(1, 0).Scaled(2)}, {K(1, 0).Scaled(2) + C(1, 1)}, 1).has_value());
}

TEST(DependenceTest, SharedConstantCellConflictsEverywhere) {
  auto v = ComputeDependence({C(2, 0)}, {C(2, 0)}, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(*, *)");
}

TEST(DependenceTest, WavefrontNeighbours) {
  // A(key[0], key[1]) vs A(key[0] - 1, key[1]) and A(key[0], key[1] - 1).
  auto up = ComputeDependence({K(2, 0), K(2, 1)}, {K(2, 0) - C(2, 1), K(2, 1)}, 2);
  auto left = ComputeDependence({K(2, 0), K(2, 1)}, {K(2, 0), K(2, 1) - C(2, 1)}, 2);
  ASSERT_TRUE(up && left);
  EXPECT_EQ(ToString(*up), "(1, 0)");
  EXPECT_EQ(ToString(*left), "(0, 1)");
}

TEST(DependenceTest, CoupledSubscriptsAreSolvedTogether) {
  // A(key[0] + key[1], key[1]) vs A(key[0] + key[1] + 2, key[1] + 1):
  // d0 + d1 = 2 and d1 = 1, so d = (1, 1).
  auto v = ComputeDependence({K(2, 0) + K(2, 1), K(2, 1)},
                             {K(2, 0) + K(2, 1) - C(2, 2), K(2, 1) - C(2, 1)}, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(1, 1)");
  // Only the sum is pinned: both components unknown.
  auto w = ComputeDependence({K(2, 0) + K(2, 1)}, {K(2, 0) + K(2, 1)}, 2);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(ToString(*w), "(*, *)");
}

TEST(DependenceTest, HomogeneousCoupledSubscriptGivesARay) {
  // A(key[0] + key[1]) with itself: d0 + d1 = 0, exactly t * (1, -1).
  std::vector<int64_t> ray;
  auto v = ComputeDependence({K(2, 0) + K(2, 1)}, {K(2, 0) + K(2, 1)}, 2, &ray);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(*, *)");
  EXPECT_EQ(ray, (std::vector<int64_t>{1, -1}));
  // 2*key[0] + 3*key[1]: t * (3, -2).
  auto w = ComputeDependence({K(2, 0).Scaled(2) + K(2, 1).Scaled(3)},
                             {K(2, 0).Scaled(2) + K(2, 1).Scaled(3)}, 2, &ray);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(ray, (std::vector<int64_t>{3, -2}));
}

TEST(DependenceTest, NoRayWhenAConstraintWasDroppedOrInhomogeneous) {
  std::vector<int64_t> ray;
  // Unknown second subscript: the set is bigger than the line.
  ComputeDependence({K(2, 0) + K(2, 1), U()}, {K(2, 0) + K(2, 1), U()}, 2, &ray);
  EXPECT_TRUE(ray.empty());
  // d0 + d1 = 1 is a shifted line whose orientation flips along it.
  ComputeDependence({K(2, 0) + K(2, 1)}, {K(2, 0) + K(2, 1) - C(2, 1)}, 2, &ray);
  EXPECT_TRUE(ray.empty());
}

TEST(DependenceTest, TransposedSubscriptsAreStar) {
  auto v = ComputeDependence({K(2, 0), K(2, 1)}, {K(2, 1), K(2, 0)}, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(ToString(*v), "(*, *)");
}

}  // namespace
}  // namespace tessera::compiler
