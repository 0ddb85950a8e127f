// Tests of ir/expr.cc: expression construction: immediates take the other operand's dtype,
// comparisons are bool, variables have identity, the dtypes' extreme values, TF32 rounding.
#include "ir/expr.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(ExprTest, ImmediatesAdaptToTheOtherOperand) {
  Var x("x", DataType::Float32());
  Expr e = x * 2;
  EXPECT_EQ(e.dtype(), DataType::Float32());
  const auto* mul = e.as<BinaryNode>();
  ASSERT_NE(mul, nullptr);
  ASSERT_NE(mul->b.as<FloatImmNode>(), nullptr);
  EXPECT_EQ(mul->b.as<FloatImmNode>()->value, 2.0);
}

TEST(ExprTest, ComparisonsAreBool) {
  Var i("i");
  EXPECT_EQ(LT(i, 4).dtype(), DataType::Bool());
  EXPECT_EQ(And(LT(i, 4), GE(i, 0)).dtype(), DataType::Bool());
}

TEST(ExprTest, VarsHaveIdentity) {
  Var a("i"), b("i");
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(a.same_as(a));
}

TEST(ExprTest, MinMaxValues) {
  EXPECT_EQ(AsConstInt(MaxValue(DataType::Int8()))[0], 127);
  EXPECT_EQ(AsConstInt(MinValue(DataType::Int32()))[0], -2147483648LL);
  EXPECT_EQ(MaxValue(DataType::Float16()).as<FloatImmNode>()->value, 65504.0);
}

// TF32 keeps 10 mantissa bits, rounding to nearest with ties away from zero.
TEST(ExprTest, RoundToTf32KeepsTenMantissaBits) {
  EXPECT_EQ(RoundToTf32(1.0f), 1.0f);
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);  // representable
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-11f), 1.0f + 0x1p-10f);  // a tie, away from zero
  EXPECT_EQ(RoundToTf32(-1.0f - 0x1p-11f), -1.0f - 0x1p-10f);
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-11f - 0x1p-23f), 1.0f);
  EXPECT_EQ(RoundToTf32(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundToTf32(-std::numeric_limits<float>::infinity()),
            -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(RoundToTf32(std::nanf(""))));
  // Denormals keep their top 10 of 23 bits: multiples of 2^-136.
  EXPECT_EQ(RoundToTf32(0x1p-136f), 0x1p-136f);
  EXPECT_EQ(RoundToTf32(0x1p-140f), 0.0f);
  EXPECT_STREQ(CallOpName(CallOp::kRoundTf32), "round_tf32");
}

}  // namespace
}  // namespace tessera
