// Tests of ir/arith/analyzer.h: constant integer bounds (index expressions, divisions, narrow
// types, saturation), proofs under bounds, value and range bindings, scoped constraints.
#include "ir/arith/analyzer.h"

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ir/stmt.h"
#include "tests/ir/arith/arith_test_util.h"

namespace tessera {
namespace arith {
namespace {

using testing::Str;

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

// Quotients of numerators that move together: a tile of 32 fused pixels over rows of 56 spans
// at most 2 rows, 4 pixels from a multiple of 4 stay in one row, and a K step of 16 from a
// multiple of 16 stays in one 64-channel tap; remainders likewise. Each bound holds for every
// value of i and j (checked against the integers), and the first three are tight.
TEST_F(AnalyzerTest, ConstIntBoundOfQuotientsAndRemaindersThatMoveTogether) {
  ConstIntBound b = analyzer.ConstIntBound(FloorDiv(i * 32 + 31, 56) - FloorDiv(i * 4, 7));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 1);
  b = analyzer.ConstIntBound(FloorDiv(i * 32 + j * 4 + 3, 56) - FloorDiv(i * 8 + j, 14));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 0);
  EXPECT_TRUE(analyzer.CanProveEqual(FloorDiv(i * 16 + 15, 64), FloorDiv(i, 4)));
  b = analyzer.ConstIntBound(FloorMod(i * 32 + j * 4 + 3, 56) - FloorMod(i * 8 + j, 14) * 4);
  EXPECT_EQ(b.min, 3);
  EXPECT_EQ(b.max, 3);
  b = analyzer.ConstIntBound(FloorMod(i * 16 + 15, 64) - FloorMod(i, 4) * 16);
  EXPECT_EQ(b.min, 15);
  EXPECT_EQ(b.max, 15);
  // Sound on shapes that do not line up, hand-picked and drawn at random: numerators a i + b j +
  // c over divisors d, and remainders scaled to a common multiple M (c1 d1 == c2 d2 == M).
  struct Case {
    int64_t a1, b1, c1, d1, a2, b2, c2, d2;
  };
  std::vector<Case> cases = {{32, 1, 31, 56, 4, 0, 0, 7},
                             {12, 3, 5, 10, 6, 0, -2, 5},
                             {7, 2, 9, 4, 7, 2, 0, 6},
                             {16, 0, 17, 48, 1, 0, 0, 3},
                             {5, 5, 0, 3, 5, 4, 1, 3}};
  std::mt19937 rng(7);
  auto draw = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int n = 0; n < 400; ++n) {
    cases.push_back(Case{draw(-8, 40), draw(-4, 8), draw(-20, 40), draw(1, 64), draw(-8, 40),
                         draw(-4, 8), draw(-20, 40), draw(1, 64)});
    // Numerators that move together (a tile's first and last element), over related divisors.
    const int64_t a = draw(1, 8) * draw(1, 8), b = draw(0, 3), d = draw(1, 16);
    const int64_t f = draw(1, 4);
    cases.push_back(Case{a, b, draw(0, 40), d * f, a * f, b * f, draw(-5, 5), d * f * f});
    cases.push_back(Case{a, b, draw(0, 40), d, a, b, draw(-3, 3), d});
  }
  for (const Case& t : cases) {
    const Expr x = i * t.a1 + j * t.b1 + Expr(t.c1), y = i * t.a2 + j * t.b2 + Expr(t.c2);
    const int64_t m = std::lcm(t.d1, t.d2);
    const ConstIntBound q = analyzer.ConstIntBound(FloorDiv(x, t.d1) - FloorDiv(y, t.d2));
    const ConstIntBound r =
        analyzer.ConstIntBound(FloorMod(x, t.d1) * (m / t.d1) - FloorMod(y, t.d2) * (m / t.d2));
    for (int64_t vi = 0; vi < 16; ++vi) {
      for (int64_t vj = 0; vj < 8; ++vj) {
        const int64_t xv = t.a1 * vi + t.b1 * vj + t.c1, yv = t.a2 * vi + t.b2 * vj + t.c2;
        const int64_t qv = FloorDivInt(xv, t.d1) - FloorDivInt(yv, t.d2);
        const int64_t rv = FloorModInt(xv, t.d1) * (m / t.d1) - FloorModInt(yv, t.d2) * (m / t.d2);
        ASSERT_TRUE(q.min <= qv && qv <= q.max)
            << Str(FloorDiv(x, t.d1) - FloorDiv(y, t.d2)) << " at i=" << vi << " j=" << vj << ": "
            << qv << " outside [" << q.min << ", " << q.max << "]";
        ASSERT_TRUE(r.min <= rv && rv <= r.max)
            << "remainders of " << Str(x) << ", " << Str(y) << " at i=" << vi << " j=" << vj;
      }
    }
  }
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
