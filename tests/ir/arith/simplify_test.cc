// Tests of ir/arith/simplify.h: folding per op and dtype, canonical sums, floordiv/floormod
// rules under bounds, conditions seen by select branches, and randomized meaning preservation
// and idempotence. The analyzer's bounds and proofs are in analyzer_test.cc.
#include "ir/arith/simplify.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ir/arith/analyzer.h"
#include "tests/ir/arith/arith_test_util.h"

namespace tessera {
namespace arith {
namespace {

using testing::Eval;
using testing::Str;

// Expects Simplify(e) to be structurally `expected`.
#define EXPECT_SIMPLIFIES_TO(analyzer, e, expected)                                    \
  do {                                                                                 \
    Expr got_ = (analyzer).Simplify(e);                                                \
    EXPECT_TRUE(ExprDeepEqual(got_, expected))                                         \
        << Str(e) << " simplified to " << Str(got_) << ", expected " << Str(expected); \
  } while (0)

int64_t ConstOf(const Expr& e) {
  const int64_t* v = AsConstInt(e);
  EXPECT_NE(v, nullptr) << Str(e) << " is not a constant";
  return v ? *v : 0;
}

Expr F32(double v) { return FloatImm(DataType::Float32(), v); }
Expr F64(double v) { return FloatImm(DataType::Float64(), v); }

double FloatOf(const Expr& e) {
  const auto* f = e.as<FloatImmNode>();
  EXPECT_NE(f, nullptr) << Str(e) << " is not a float constant";
  return f ? f->value : 0.0;
}

class SimplifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    analyzer.Bind(i, Range{Expr(0), Expr(16)});
    analyzer.Bind(j, Range{Expr(0), Expr(8)});
  }
  Var i{"i"}, j{"j"}, k{"k"};
  Analyzer analyzer;
};

// ---- Constant folding -----------------------------------------------------------------

TEST(SimplifyFoldTest, FoldsInt64Arithmetic) {
  EXPECT_EQ(ConstOf(Simplify(Expr(3) + 4)), 7);
  EXPECT_EQ(ConstOf(Simplify(Expr(3) - 10)), -7);
  EXPECT_EQ(ConstOf(Simplify(Expr(6) * -7)), -42);
  EXPECT_EQ(ConstOf(Simplify(Div(Expr(-7), 2))), -3);  // C division truncates
  EXPECT_EQ(ConstOf(Simplify(FloorDiv(Expr(-7), 2))), -4);
  EXPECT_EQ(ConstOf(Simplify(FloorMod(Expr(-7), 2))), 1);
  EXPECT_EQ(ConstOf(Simplify(FloorMod(Expr(7), -2))), -1);
  EXPECT_EQ(ConstOf(Simplify(Min(Expr(3), -2))), -2);
  EXPECT_EQ(ConstOf(Simplify(Max(Expr(3), -2))), 3);
}

TEST(SimplifyFoldTest, LeavesDivisionByZeroUnfolded) {
  Expr e = FloorDiv(Expr(3), 0);
  EXPECT_NE(Simplify(e).as<BinaryNode>(), nullptr);
  EXPECT_NE(Simplify(Div(Expr(3), 0)).as<BinaryNode>(), nullptr);
}

TEST(SimplifyFoldTest, FoldsComparisonsToBool) {
  Expr t = Simplify(LT(Expr(3), 4));
  EXPECT_TRUE(t.dtype().is_bool());
  EXPECT_EQ(ConstOf(t), 1);
  EXPECT_EQ(ConstOf(Simplify(GE(Expr(3), 4))), 0);
  EXPECT_EQ(ConstOf(Simplify(EQ(Expr(4), 4))), 1);
  EXPECT_EQ(ConstOf(Simplify(NE(Expr(4), 4))), 0);
}

TEST(SimplifyFoldTest, WrapsInt32Overflow) {
  Expr a = IntImm(DataType::Int32(), 2147483647);
  Expr sum = Simplify(a + IntImm(DataType::Int32(), 1));
  EXPECT_EQ(sum.dtype(), DataType::Int32());
  EXPECT_EQ(ConstOf(sum), -2147483648LL);
}

TEST(SimplifyFoldTest, WrapsInt8AndUInt8) {
  EXPECT_EQ(ConstOf(Simplify(IntImm(DataType::Int8(), 100) * IntImm(DataType::Int8(), 3))), 44);
  EXPECT_EQ(ConstOf(Simplify(IntImm(DataType::UInt8(), 3) - IntImm(DataType::UInt8(), 5))), 254);
  EXPECT_EQ(
      ConstOf(Simplify(FloorDiv(IntImm(DataType::UInt8(), 200), IntImm(DataType::UInt8(), 7)))),
      28);
}

TEST(SimplifyFoldTest, FoldsFloat32WithRounding) {
  Expr a = FloatImm(DataType::Float32(), 0.1);
  Expr b = FloatImm(DataType::Float32(), 0.2);
  Expr sum = Simplify(a + b);
  EXPECT_EQ(sum.dtype(), DataType::Float32());
  EXPECT_EQ(FloatOf(sum), static_cast<double>(static_cast<float>(0.1 + 0.2)));
  EXPECT_EQ(FloatOf(Simplify(Div(F32(1.0), F32(4.0)))), 0.25);
  EXPECT_EQ(ConstOf(Simplify(LT(F64(1.5), F64(2.0)))), 1);
  EXPECT_EQ(FloatOf(Simplify(FloorMod(F64(-7.5), F64(2.0)))), 0.5);
}

TEST(SimplifyFoldTest, LeavesFloat16Unfolded) {
  Expr a = FloatImm(DataType::Float16(), 1.0);
  EXPECT_NE(Simplify(a + a).as<BinaryNode>(), nullptr);
}

TEST(SimplifyFoldTest, FoldsCasts) {
  EXPECT_EQ(ConstOf(Simplify(Cast(DataType::Int8(), Expr(300)))), 44);
  EXPECT_EQ(ConstOf(Simplify(Cast(DataType::Int32(), FloatImm(DataType::Float32(), -2.7)))), -2);
  EXPECT_EQ(FloatOf(Simplify(Cast(DataType::Float32(), Expr(3)))), 3.0);
  EXPECT_EQ(ConstOf(Simplify(Cast(DataType::Bool(), Expr(5)))), 1);
  Var x("x");
  EXPECT_TRUE(Simplify(Cast(DataType::Int64(), x)).same_as(x));
}

TEST(SimplifyFoldTest, FoldsMathCalls) {
  EXPECT_EQ(FloatOf(Simplify(Call(CallOp::kSqrt, {FloatImm(DataType::Float32(), 16.0)}))), 4.0);
  EXPECT_EQ(ConstOf(Simplify(Call(CallOp::kAbs, {Expr(-5)}))), 5);
}

TEST(SimplifyFoldTest, FloatIdentitiesWithoutReassociation) {
  Var x("x", DataType::Float32());
  EXPECT_TRUE(Simplify(x + F32(0.0)).same_as(x));
  EXPECT_TRUE(Simplify(x * F32(1.0)).same_as(x));
  EXPECT_TRUE(Simplify(Div(x, F32(1.0))).same_as(x));
  // (x + 1) - 1 is not x in floating point in general: left alone.
  EXPECT_FALSE(Simplify((x + F32(1.0)) - F32(1.0)).same_as(x));
}

TEST(SimplifyFoldTest, LogicalSimplification) {
  Var x("x");
  Expr c = LT(x, 5);
  EXPECT_TRUE(ExprDeepEqual(Simplify(And(True(), c)), c));
  EXPECT_EQ(ConstOf(Simplify(And(False(), c))), 0);
  EXPECT_TRUE(ExprDeepEqual(Simplify(Or(False(), c)), c));
  EXPECT_EQ(ConstOf(Simplify(Or(c, True()))), 1);
  EXPECT_TRUE(ExprDeepEqual(Simplify(And(c, c)), c));
  EXPECT_EQ(ConstOf(Simplify(Not(False()))), 1);
  EXPECT_TRUE(ExprDeepEqual(Simplify(Not(Not(c))), c));
  EXPECT_TRUE(ExprDeepEqual(Simplify(Not(c)), GE(x, 5)));
}

TEST(SimplifyFoldTest, SelectWithConstantCondition) {
  Var x("x"), y("y");
  EXPECT_TRUE(Simplify(Select(True(), x, y)).same_as(x));
  EXPECT_TRUE(Simplify(Select(LT(Expr(3), 2), x, y)).same_as(y));
  EXPECT_TRUE(Simplify(Select(LT(x, y), x + 0, x)).same_as(x));
}

// ---- Canonical sums ---------------------------------------------------------------------

TEST_F(SimplifyTest, CancelsLinearTerms) {
  EXPECT_TRUE(analyzer.Simplify((i * 8 + j) - i * 8).same_as(j));
  EXPECT_EQ(ConstOf(analyzer.Simplify((i + j) - (j + i))), 0);
  EXPECT_SIMPLIFIES_TO(analyzer, (i + 3) + (i - 5), i * 2 - 2);
}

TEST_F(SimplifyTest, DistributesMultiplicationOverConstants) {
  EXPECT_SIMPLIFIES_TO(analyzer, (i + 2) * 4, i * 4 + 8);
  EXPECT_SIMPLIFIES_TO(analyzer, (i * 2 + j) * 3 - i * 6, j * 3);
  EXPECT_SIMPLIFIES_TO(analyzer, Expr(2) * (i - j), i * 2 - j * 2);
}

TEST_F(SimplifyTest, RemovesIdentities) {
  EXPECT_TRUE(analyzer.Simplify(i * 1).same_as(i));
  EXPECT_TRUE(analyzer.Simplify(i + 0).same_as(i));
  EXPECT_TRUE(analyzer.Simplify(FloorDiv(i, 1)).same_as(i));
  EXPECT_EQ(ConstOf(analyzer.Simplify(FloorMod(k, 1))), 0);
  EXPECT_EQ(ConstOf(analyzer.Simplify(k * 0)), 0);
}

TEST_F(SimplifyTest, OrdersAtomsByFirstAppearance) {
  EXPECT_SIMPLIFIES_TO(analyzer, k + i + k, k * 2 + i);
  EXPECT_SIMPLIFIES_TO(analyzer, i + k + i, i * 2 + k);
  // Subtracted terms come after added ones; a lone subtraction starts from the constant.
  EXPECT_SIMPLIFIES_TO(analyzer, Expr(0) - k + i, i - k);
  EXPECT_SIMPLIFIES_TO(analyzer, Expr(5) - k, Expr(5) - k);
}

TEST_F(SimplifyTest, CombinesFloorDivAndFloorModOfSameValue) {
  EXPECT_TRUE(analyzer.Simplify(FloorDiv(k, 8) * 8 + FloorMod(k, 8)).same_as(k));
  EXPECT_SIMPLIFIES_TO(analyzer, FloorMod(k, 4) * 3 + FloorDiv(k, 4) * 12, k * 3);
}

// The inverse of a fuse of three loops mapped forward again (TransformBlockLayout of a copy whose
// buffer fuses a window's taps and channels): floordiv(k, 192) * 192 + floormod(floordiv(k, 64),
// 3) * 64 + floormod(k, 64) is k; and with k = 16 i + j (j < 16, a K step of 16 over 16
// channels a tap), floordiv(k, 48) * 48 + floormod(floordiv(k, 16), 3) * 16 + floormod(k, 16).
TEST_F(SimplifyTest, CombinesTheInverseOfAFuseOfThreeLoops) {
  EXPECT_TRUE(
      analyzer
          .Simplify(FloorDiv(k, 192) * 192 + FloorMod(FloorDiv(k, 64), 3) * 64 + FloorMod(k, 64))
          .same_as(k));
  Var t{"t"}, f{"f"};
  analyzer.Bind(t, Range{Expr(0), Expr(9)});
  analyzer.Bind(f, Range{Expr(0), Expr(16)});
  const Expr x = t * 16 + f;
  EXPECT_SIMPLIFIES_TO(analyzer,
                       FloorDiv(x, 48) * 48 + FloorMod(FloorDiv(x, 16), 3) * 16 + FloorMod(x, 16),
                       t * 16 + f);
}

// ---- floordiv / floormod under bounds ---------------------------------------------------

TEST_F(SimplifyTest, FloorDivOfTiledIndex) {
  EXPECT_TRUE(analyzer.Simplify(FloorDiv(i * 8 + j, 8)).same_as(i));
  EXPECT_TRUE(analyzer.Simplify(FloorMod(i * 8 + j, 8)).same_as(j));
  EXPECT_TRUE(analyzer.Simplify(FloorDiv(j + i * 8, 8)).same_as(i));
}

TEST_F(SimplifyTest, FloorDivOfSmallValueIsZero) {
  EXPECT_EQ(ConstOf(analyzer.Simplify(FloorDiv(j, 8))), 0);
  EXPECT_TRUE(analyzer.Simplify(FloorMod(j, 8)).same_as(j));
  EXPECT_EQ(ConstOf(analyzer.Simplify(FloorDiv(j + 8, 8))), 1);
  EXPECT_TRUE(analyzer.Simplify(FloorMod(j + 8, 8)).same_as(j));
  // j in [0, 8) does not fit [0, 4): kept.
  EXPECT_SIMPLIFIES_TO(analyzer, FloorDiv(j, 4), FloorDiv(j, 4));
}

TEST_F(SimplifyTest, FloorDivKeepsUnknownRemainder) {
  EXPECT_SIMPLIFIES_TO(analyzer, FloorDiv(i * 8 + k, 8), i + FloorDiv(k, 8));
  EXPECT_SIMPLIFIES_TO(analyzer, FloorMod(i * 8 + k, 8), FloorMod(k, 8));
}

TEST_F(SimplifyTest, NestedFloorDivMerges) {
  EXPECT_SIMPLIFIES_TO(analyzer, FloorDiv(FloorDiv(k, 4), 8), FloorDiv(k, 32));
  // Division of a sum whose remainder is itself a floordiv.
  EXPECT_SIMPLIFIES_TO(analyzer, FloorDiv(FloorDiv(i * 16 + k, 4), 2), i * 2 + FloorDiv(k, 8));
}

TEST_F(SimplifyTest, NestedFloorModWhenDivisorDivides) {
  EXPECT_SIMPLIFIES_TO(analyzer, FloorMod(FloorMod(k, 16), 4), FloorMod(k, 4));
  // 16 does not divide 6: kept (after simplifying the inside).
  EXPECT_SIMPLIFIES_TO(analyzer, FloorMod(FloorMod(k, 6), 16), FloorMod(k, 6));
  EXPECT_SIMPLIFIES_TO(analyzer, FloorMod(FloorMod(k, 6), 4), FloorMod(FloorMod(k, 6), 4));
}

TEST_F(SimplifyTest, DivisionByCommonFactor) {
  EXPECT_SIMPLIFIES_TO(analyzer, FloorDiv(k * 4, 8), FloorDiv(k, 2));
  EXPECT_SIMPLIFIES_TO(analyzer, FloorMod(k * 4, 8), FloorMod(k, 2) * 4);
  EXPECT_SIMPLIFIES_TO(analyzer, FloorDiv(k * 8, 4), k * 2);
}

TEST_F(SimplifyTest, TruncDivOfNonNegativeActsLikeFloorDiv) {
  EXPECT_TRUE(analyzer.Simplify(Div(i * 8 + j, 8)).same_as(i));
  // k may be negative: C division is kept.
  EXPECT_SIMPLIFIES_TO(analyzer, Div(k, 8), Div(k, 8));
}

// ---- min / max / comparisons -------------------------------------------------------------

TEST_F(SimplifyTest, MinMaxWithProvableOrder) {
  EXPECT_TRUE(analyzer.Simplify(Min(i, 16)).same_as(i));
  EXPECT_EQ(ConstOf(analyzer.Simplify(Max(i, 16))), 16);
  EXPECT_SIMPLIFIES_TO(analyzer, Min(k + 2, k + 5), k + 2);
  EXPECT_SIMPLIFIES_TO(analyzer, Max(k * 2 + 1, k * 2), k * 2 + 1);
  EXPECT_SIMPLIFIES_TO(analyzer, Min(i, j), Min(i, j));
  EXPECT_TRUE(analyzer.Simplify(Min(k, k)).same_as(k));
}

TEST_F(SimplifyTest, ComparisonsDecidedByBounds) {
  EXPECT_EQ(ConstOf(analyzer.Simplify(LT(i, 16))), 1);
  EXPECT_EQ(ConstOf(analyzer.Simplify(GE(i, 0))), 1);
  EXPECT_EQ(ConstOf(analyzer.Simplify(LT(i * 8 + j, 128))), 1);
  EXPECT_EQ(ConstOf(analyzer.Simplify(GE(i * 8 + j, 128))), 0);
  EXPECT_EQ(ConstOf(analyzer.Simplify(EQ(k + 1, k + 1))), 1);
  EXPECT_EQ(ConstOf(analyzer.Simplify(LT(k, k + 1))), 1);
  EXPECT_EQ(ConstOf(analyzer.Simplify(NE(j, 8))), 1);
  EXPECT_SIMPLIFIES_TO(analyzer, LT(i, 15), LT(i, 15));
}

TEST(SimplifyNarrowTest, Int8ComparisonRespectsWrapAround) {
  // x + 100 may wrap in int8, so x + 100 > x cannot be decided.
  Var x("x", DataType::Int8());
  Expr cmp = GT(x + IntImm(DataType::Int8(), 100), x);
  EXPECT_EQ(AsConstInt(Simplify(cmp)), nullptr);
  Analyzer analyzer;
  analyzer.Bind(x, Range{IntImm(DataType::Int8(), 0), IntImm(DataType::Int8(), 10)});
  EXPECT_EQ(ConstOf(analyzer.Simplify(cmp)), 1);
}

TEST_F(SimplifyTest, SelectBranchesSeeTheirCondition) {
  // In the true branch i < 4, so floordiv(i, 4) is 0; in the false one i >= 4.
  Expr e = Select(LT(i, 4), FloorDiv(i, 4), Max(i, 4));
  EXPECT_SIMPLIFIES_TO(analyzer, e, Select(LT(i, 4), Expr(0), i));
}

// ---- Idempotence and meaning preservation ---------------------------------------------------

TEST_F(SimplifyTest, SimplifyIsIdempotentOnExamples) {
  std::vector<Expr> examples = {
      FloorDiv(i * 16 + k * 3 + 9, 8), FloorMod(k * 6 + 4, 8),
      Expr(3) - (k - i) * 2,           FloorDiv(k - 1, 8),
      Min(k * 2, i + k) + Max(j, 3),   Select(LT(k, i), k * 2, FloorMod(k, 3)),
  };
  for (const Expr& e : examples) {
    Expr once = analyzer.Simplify(e);
    Expr twice = analyzer.Simplify(once);
    EXPECT_TRUE(ExprDeepEqual(once, twice)) << Str(e) << ": " << Str(once) << " vs " << Str(twice);
  }
}

struct VarSpec {
  Var var;
  int64_t lo, hi;  // inclusive
};

void CheckMeaningPreserved(int64_t seed, int num_exprs, bool bind_ranges) {
  Random rng(seed);
  std::vector<VarSpec> specs = {
      {Var("x"), 0, 7}, {Var("y"), 0, 15}, {Var("z"), 0, 4}, {Var("w"), -6, 9}};
  std::vector<Var> vars;
  Analyzer analyzer;
  for (const VarSpec& s : specs) {
    vars.push_back(s.var);
    if (bind_ranges) analyzer.Bind(s.var, Range{Expr(s.lo), Expr(s.hi - s.lo + 1)});
  }
  testing::ExprGenerator gen(&rng, vars);
  int checked = 0;
  for (int n = 0; n < num_exprs; ++n) {
    Expr e = gen.Gen(static_cast<int>(rng.UniformInt(1, 6)));
    Expr s = analyzer.Simplify(e);
    Expr again = analyzer.Simplify(s);
    ASSERT_TRUE(ExprDeepEqual(s, again))
        << "not idempotent: " << Str(e) << "\n -> " << Str(s) << "\n -> " << Str(again);
    for (int trial = 0; trial < 24; ++trial) {
      testing::Env env;
      for (const VarSpec& spec : specs) {
        // Without bound ranges, values stray outside them (including negatives).
        int64_t lo = bind_ranges ? spec.lo : spec.lo - 20;
        int64_t hi = bind_ranges ? spec.hi : spec.hi + 20;
        env[spec.var.get()] = rng.UniformInt(lo, hi + 1);
      }
      ASSERT_EQ(Eval(e, env), Eval(s, env)) << Str(e) << "\n simplified to " << Str(s);
      ++checked;
    }
  }
  EXPECT_EQ(checked, num_exprs * 24);
}

TEST(SimplifyRandomTest, PreservesMeaningWithBoundedVars) {
  for (int64_t seed : {1, 2, 3}) CheckMeaningPreserved(seed, 300, /*bind_ranges=*/true);
}

TEST(SimplifyRandomTest, PreservesMeaningWithoutKnowledge) {
  for (int64_t seed : {11, 12}) CheckMeaningPreserved(seed, 300, /*bind_ranges=*/false);
}

TEST(SimplifyRandomTest, IsDeterministic) {
  Random rng1(7), rng2(7);
  Var x("x"), y("y");
  testing::ExprGenerator g1(&rng1, {x, y}), g2(&rng2, {x, y});
  for (int n = 0; n < 50; ++n) {
    Expr a = Simplify(g1.Gen(4));
    Expr b = Simplify(g2.Gen(4));
    EXPECT_TRUE(ExprDeepEqual(a, b)) << Str(a) << " vs " << Str(b);
  }
}

}  // namespace
}  // namespace arith
}  // namespace tessera
