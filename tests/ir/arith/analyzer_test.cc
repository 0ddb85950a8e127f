// Tests of ir/arith/analyzer.h: constant integer bounds (index expressions, divisions, narrow
// types, saturation), proofs under bounds, value and range bindings, scoped constraints.
#include "ir/arith/analyzer.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "ir/stmt.h"

namespace tessera {
namespace arith {
namespace {

class AnalyzerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    analyzer.Bind(i, Range{Expr(0), Expr(16)});
    analyzer.Bind(j, Range{Expr(0), Expr(8)});
  }
  Var i{"i"}, j{"j"}, k{"k"};
  Analyzer analyzer;
};

// ---- Bounds ------------------------------------------------------------------------------

TEST_F(AnalyzerTest, ConstIntBoundOfIndexExpressions) {
  ConstIntBound b = analyzer.ConstIntBound(i * 8 + j);
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 127);
  b = analyzer.ConstIntBound(FloorDiv(i * 8 + j, 4));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 31);
  b = analyzer.ConstIntBound(FloorMod(k, 8));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 7);
  b = analyzer.ConstIntBound(j - i);
  EXPECT_EQ(b.min, -15);
  EXPECT_EQ(b.max, 7);
  b = analyzer.ConstIntBound(Min(i, j) * -2);
  EXPECT_EQ(b.min, -14);
  EXPECT_EQ(b.max, 0);
  b = analyzer.ConstIntBound(Select(LT(i, 3), i, Expr(100)));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 100);
}

TEST_F(AnalyzerTest, ConstIntBoundOfDivisions) {
  ConstIntBound b = analyzer.ConstIntBound(Div(j - 4, 2));  // C division of [-4, 3]
  EXPECT_EQ(b.min, -2);
  EXPECT_EQ(b.max, 1);
  b = analyzer.ConstIntBound(FloorDiv(j - 4, 2));
  EXPECT_EQ(b.min, -2);
  EXPECT_EQ(b.max, 1);
  b = analyzer.ConstIntBound(FloorDiv(j - 5, 2));
  EXPECT_EQ(b.min, -3);
  b = analyzer.ConstIntBound(FloorMod(j + 16, 8));  // same period: exact
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 7);
  b = analyzer.ConstIntBound(FloorDiv(j, i + 1));  // divisor in [1, 16]
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 7);
}

TEST_F(AnalyzerTest, ConstIntBoundOfUnknownIsInfinite) {
  ConstIntBound b = analyzer.ConstIntBound(k * 2);
  EXPECT_EQ(b.min, ConstIntBound::kNegInf);
  EXPECT_EQ(b.max, ConstIntBound::kPosInf);
  b = analyzer.ConstIntBound(Max(k, 3));
  EXPECT_EQ(b.min, 3);
  EXPECT_EQ(b.max, ConstIntBound::kPosInf);
}

TEST(ConstIntBoundTest, NarrowTypesAndCasts) {
  Analyzer analyzer;
  Var x("x", DataType::Int32());
  ConstIntBound b = analyzer.ConstIntBound(x);
  EXPECT_EQ(b.min, -2147483648LL);
  EXPECT_EQ(b.max, 2147483647LL);
  b = analyzer.ConstIntBound(Cast(DataType::Int8(), Expr(1000)));
  EXPECT_EQ(b.min, -128);  // may wrap: whole int8 range
  EXPECT_EQ(b.max, 127);
  b = analyzer.ConstIntBound(Cast(DataType::Int8(), Expr(100)));
  EXPECT_TRUE(b.is_const());
  EXPECT_EQ(analyzer.ConstIntBound(LT(x, 3)).max, 1);
}

TEST(ConstIntBoundTest, SaturatingArithmetic) {
  EXPECT_EQ(BoundAdd(ConstIntBound::kPosInf, 5), ConstIntBound::kPosInf);
  EXPECT_EQ(BoundAdd(ConstIntBound::kNegInf, -5), ConstIntBound::kNegInf);
  EXPECT_EQ(BoundMul(ConstIntBound::kNegInf, -2), ConstIntBound::kPosInf);
  EXPECT_EQ(BoundMul(int64_t{1} << 40, int64_t{1} << 40), ConstIntBound::kPosInf);
  EXPECT_EQ(BoundMul(0, ConstIntBound::kPosInf), 0);
}

// ---- Proofs, bindings and constraints
// ------------------------------------------------------------------------------

TEST_F(AnalyzerTest, CanProveUnderBounds) {
  EXPECT_TRUE(analyzer.CanProve(LT(i, 16)));
  EXPECT_TRUE(analyzer.CanProve(And(GE(j, 0), LT(i * 8 + j, 128))));
  EXPECT_FALSE(analyzer.CanProve(LT(i, 15)));
  EXPECT_FALSE(analyzer.CanProve(LT(k, 100)));
  EXPECT_TRUE(analyzer.CanProveEqual(FloorDiv(i * 8 + j, 8), i));
  EXPECT_FALSE(analyzer.CanProveEqual(i, j));
  EXPECT_TRUE(analyzer.CanProveEqual(LT(i, 16), True()));
  EXPECT_TRUE(analyzer.CanProveLess(j, 8));
  EXPECT_TRUE(analyzer.CanProveLessEqual(k, k));
  EXPECT_TRUE(analyzer.CanProveGreaterEqual(i * 8 + j, 0));
}

TEST_F(AnalyzerTest, BindValueSubstitutes) {
  Var t("t");
  analyzer.Bind(t, i * 8 + j);
  EXPECT_TRUE(analyzer.Simplify(FloorDiv(t, 8)).same_as(i));
  EXPECT_EQ(analyzer.ConstIntBound(t).max, 127);
}

TEST_F(AnalyzerTest, BindSymbolicRangeUsesConstantEnds) {
  Var t("t");
  analyzer.Bind(t, Range{i * 4, Expr(4)});
  ConstIntBound b = analyzer.ConstIntBound(t);
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 63);
}

TEST_F(AnalyzerTest, ScopedConstraintTightensAndRestores) {
  EXPECT_FALSE(analyzer.CanProve(LT(i, 10)));
  {
    ConstraintScope scope = analyzer.EnterConstraint(And(LT(i, 10), GE(k, 2)));
    EXPECT_TRUE(analyzer.CanProve(LT(i, 10)));
    EXPECT_TRUE(analyzer.CanProve(LT(i * 8 + j, 80)));
    EXPECT_TRUE(analyzer.CanProve(GT(k, 1)));
    EXPECT_TRUE(analyzer.Simplify(Min(i, 12)).same_as(i));
  }
  EXPECT_FALSE(analyzer.CanProve(LT(i, 10)));
  EXPECT_FALSE(analyzer.CanProve(GT(k, 1)));
  EXPECT_EQ(analyzer.ConstIntBound(i).max, 15);
}

TEST_F(AnalyzerTest, ScopedConstraintRemembersFacts) {
  Expr padded = LT(i * 8 + j + k, 30);
  EXPECT_FALSE(analyzer.CanProve(padded));
  {
    ConstraintScope scope = analyzer.EnterConstraint(padded);
    EXPECT_TRUE(analyzer.CanProve(padded));
    EXPECT_TRUE(analyzer.Simplify(Select(padded, k, i)).same_as(k));
  }
  EXPECT_FALSE(analyzer.CanProve(padded));
}

}  // namespace
}  // namespace arith
}  // namespace tessera
