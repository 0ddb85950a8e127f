// Tests of ir/arith/linear.h: coefficients and base of linear forms, affinity, products of
// extents.
#include "ir/arith/linear.h"

#include <optional>

#include "gtest/gtest.h"
#include "ir/arith/simplify.h"
#include "tests/ir/arith/arith_test_util.h"

namespace tessera {
namespace arith {
namespace {

using testing::Str;

#define EXPECT_EXPR_EQ(got, expected) \
  EXPECT_TRUE(ExprDeepEqual(got, expected)) << "got " << Str(got) << ", expected " << Str(expected)

TEST(LinearTest, DetectsCoefficientsAndBase) {
  Var i("i"), j("j"), n("n");
  std::optional<LinearEquation> eq = DetectLinearEquation(i * 8 + j * 2 - i * 3 + n + 5, {i, j});
  ASSERT_TRUE(eq.has_value());
  EXPECT_EXPR_EQ(eq->coeffs[0], Expr(5));
  EXPECT_EXPR_EQ(eq->coeffs[1], Expr(2));
  EXPECT_EXPR_EQ(eq->base, n + 5);
}

TEST(LinearTest, SymbolicCoefficientAndAbsentVariable) {
  Var i("i"), j("j"), n("n");
  std::optional<LinearEquation> eq = DetectLinearEquation(i * n + 1, {i, j});
  ASSERT_TRUE(eq.has_value());
  EXPECT_TRUE(eq->coeffs[0].same_as(n));
  EXPECT_EXPR_EQ(eq->coeffs[1], Expr(0));
}

TEST(LinearTest, RejectsNonLinear) {
  Var i("i"), j("j");
  EXPECT_FALSE(DetectLinearEquation(i * j, {i, j}).has_value());
  EXPECT_FALSE(IsAffine(FloorDiv(i, 2), {i}));
  EXPECT_TRUE(IsAffine(FloorDiv(j, 2) + i * 3, {i}));
  EXPECT_TRUE(IsAffine(Expr(7), {i}));
}

TEST(LinearTest, ProdExtents) {
  Var n("n");
  EXPECT_EXPR_EQ(ProdExtents({Range{Expr(0), Expr(4)}, Range{Expr(2), Expr(8)}}), Expr(32));
  EXPECT_EXPR_EQ(ProdExtents({}), Expr(1));
  EXPECT_EXPR_EQ(ProdExtents({Range{Expr(0), n}, Range{Expr(0), Expr(2)}}), n * 2);
}

}  // namespace
}  // namespace arith
}  // namespace tessera
