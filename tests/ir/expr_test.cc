// Tests of ir/expr.cc: expression construction: immediates take the other operand's dtype,
// comparisons are bool, variables have identity, the dtypes' extreme values.
#include "ir/expr.h"

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

}  // namespace
}  // namespace tessera
