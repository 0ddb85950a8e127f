// Tests of ir/arith/const_fold.h: wrap-around per integer dtype, folding of single binary
// operations, casts and math calls on immediates, and the cases that must stay unfolded.
#include "ir/arith/const_fold.h"

#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"
#include "ir/arith/analyzer.h"
#include "ir/stmt.h"
#include "tests/ir/arith/arith_test_util.h"

namespace tessera {
namespace arith {
namespace {

using testing::Str;

int64_t IntOf(const Expr& e) {
  const auto* i = e.as<IntImmNode>();
  EXPECT_NE(i, nullptr) << Str(e) << " is not an integer immediate";
  return i ? i->value : 0;
}

double FloatOf(const Expr& e) {
  const auto* f = e.as<FloatImmNode>();
  EXPECT_NE(f, nullptr) << Str(e) << " is not a float immediate";
  return f ? f->value : 0.0;
}

Expr I8(int64_t v) { return IntImm(DataType::Int8(), v); }
Expr U8(int64_t v) { return IntImm(DataType::UInt8(), v); }
Expr F32(double v) { return FloatImm(DataType::Float32(), v); }
Expr F64(double v) { return FloatImm(DataType::Float64(), v); }

TEST(WrapToDTypeTest, SignedTypesWrapInTwosComplement) {
  EXPECT_EQ(WrapToDType(DataType::Int8(), 127), 127);
  EXPECT_EQ(WrapToDType(DataType::Int8(), 128), -128);
  EXPECT_EQ(WrapToDType(DataType::Int8(), -129), 127);
  EXPECT_EQ(WrapToDType(DataType::Int32(), int64_t{1} << 31), -2147483648LL);
}

TEST(WrapToDTypeTest, UnsignedBoolAnd64BitTypes) {
  EXPECT_EQ(WrapToDType(DataType::UInt8(), -1), 255);
  EXPECT_EQ(WrapToDType(DataType::UInt8(), 256), 0);
  EXPECT_EQ(WrapToDType(DataType::Bool(), 7), 1);
  EXPECT_EQ(WrapToDType(DataType::Bool(), 0), 0);
  EXPECT_EQ(WrapToDType(DataType::Int64(), INT64_MIN), INT64_MIN);
}

TEST(WrapAddMulTest, WrapInTheDTypeAndNeverOverflowInt64) {
  EXPECT_EQ(WrapAdd(DataType::Int8(), 100, 100), -56);
  EXPECT_EQ(WrapMul(DataType::Int8(), 100, 3), 44);
  EXPECT_EQ(WrapAdd(DataType::Int64(), INT64_MAX, 1), INT64_MIN);  // defined: done unsigned
  EXPECT_EQ(WrapMul(DataType::UInt8(), 16, 17), 16);
}

TEST(FoldBinaryTest, IntegerDivisionsFollowTheirOwnRounding) {
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kDiv, Expr(-7), Expr(2))), -3);  // C truncation
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kFloorDiv, Expr(-7), Expr(2))), -4);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kFloorMod, Expr(-7), Expr(2))), 1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kFloorMod, Expr(7), Expr(-2))), -1);
}

TEST(FoldBinaryTest, DivisionByZeroIsNotFolded) {
  EXPECT_FALSE(FoldBinary(BinaryOp::kDiv, Expr(3), Expr(0)).defined());
  EXPECT_FALSE(FoldBinary(BinaryOp::kFloorMod, Expr(3), Expr(0)).defined());
}

TEST(FoldBinaryTest, NarrowIntegersWrapAndCompareInTheirType) {
  Expr product = FoldBinary(BinaryOp::kMul, I8(100), I8(3));
  EXPECT_EQ(product.dtype(), DataType::Int8());
  EXPECT_EQ(IntOf(product), 44);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kSub, U8(3), U8(5))), 254);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kDiv, I8(-128), I8(-1))), -128);  // wraps, no trap
}

TEST(FoldBinaryTest, ComparisonsAndLogicGiveBool) {
  Expr lt = FoldBinary(BinaryOp::kLT, Expr(3), Expr(4));
  EXPECT_TRUE(lt.dtype().is_bool());
  EXPECT_EQ(IntOf(lt), 1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kGE, Expr(3), Expr(4))), 0);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kAnd, True(), False())), 0);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kOr, True(), False())), 1);
  Expr flt = FoldBinary(BinaryOp::kLT, F64(1.5), F64(2.0));
  EXPECT_TRUE(flt.dtype().is_bool());
  EXPECT_EQ(IntOf(flt), 1);
}

TEST(FoldBinaryTest, NaNComparesFalseExceptNotEqual) {
  const Expr nan = F64(std::nan(""));
  for (BinaryOp op : {BinaryOp::kEQ, BinaryOp::kLT, BinaryOp::kLE, BinaryOp::kGT, BinaryOp::kGE}) {
    EXPECT_EQ(IntOf(FoldBinary(op, nan, F64(1.0))), 0) << BinaryOpName(op);
    EXPECT_EQ(IntOf(FoldBinary(op, nan, nan)), 0) << BinaryOpName(op);
  }
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kNE, nan, nan)), 1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kLE, F64(1.0), F64(1.0))), 1);
}

TEST(FoldBinaryTest, UInt64ComparesUnsigned) {
  const Expr big = IntImm(DataType(DataType::Code::kUInt, 64), -1);  // 2^64 - 1
  const Expr one = IntImm(DataType(DataType::Code::kUInt, 64), 1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kLT, one, big)), 1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kGE, big, one)), 1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kMax, one, big)), -1);
  EXPECT_EQ(IntOf(FoldBinary(BinaryOp::kLT, Expr(-1), Expr(1))), 1);  // int64: signed
}

TEST(FoldBinaryTest, Float32IsRoundedToFloatPrecision) {
  Expr sum = FoldBinary(BinaryOp::kAdd, F32(0.1), F32(0.2));
  EXPECT_EQ(sum.dtype(), DataType::Float32());
  EXPECT_EQ(FloatOf(sum), static_cast<double>(static_cast<float>(0.1 + 0.2)));
  EXPECT_EQ(FloatOf(FoldBinary(BinaryOp::kFloorMod, F64(-7.5), F64(2.0))), 0.5);
  EXPECT_EQ(FloatOf(FoldBinary(BinaryOp::kMin, F64(1.0), F64(-2.0))), -2.0);
}

TEST(FoldBinaryTest, NonImmediatesAndFloat16AreNotFolded) {
  Var x("x");
  EXPECT_FALSE(FoldBinary(BinaryOp::kAdd, x, Expr(1)).defined());
  Expr h = FloatImm(DataType::Float16(), 1.0);
  EXPECT_FALSE(FoldBinary(BinaryOp::kAdd, h, h).defined());
}

TEST(FoldCastTest, IntegerCastsWrapAndFloatCastsTruncate) {
  EXPECT_EQ(IntOf(FoldCast(DataType::Int8(), Expr(300))), 44);
  EXPECT_EQ(IntOf(FoldCast(DataType::Int32(), F32(-2.7))), -2);
  EXPECT_EQ(IntOf(FoldCast(DataType::Bool(), Expr(5))), 1);
  Expr f = FoldCast(DataType::Float32(), Expr(3));
  EXPECT_EQ(f.dtype(), DataType::Float32());
  EXPECT_EQ(FloatOf(f), 3.0);
}

TEST(FoldCastTest, OutOfRangeAndNonFiniteFloatsAreNotFolded) {
  EXPECT_FALSE(FoldCast(DataType::Int8(), F32(1000.0)).defined());
  EXPECT_FALSE(FoldCast(DataType::Int32(), F64(std::nan(""))).defined());
  EXPECT_FALSE(FoldCast(DataType::Float16(), Expr(1)).defined());
  Var x("x");
  EXPECT_FALSE(FoldCast(DataType::Int32(), x).defined());
}

TEST(FoldCallTest, MathOnFloatImmediatesAndAbsOfIntegers) {
  EXPECT_EQ(FloatOf(FoldCall(CallOp::kSqrt, DataType::Float32(), {F32(16.0)})), 4.0);
  EXPECT_EQ(FloatOf(FoldCall(CallOp::kPow, DataType::Float64(), {F64(2.0), F64(10.0)})), 1024.0);
  EXPECT_EQ(FloatOf(FoldCall(CallOp::kFloor, DataType::Float64(), {F64(-1.5)})), -2.0);
  EXPECT_EQ(IntOf(FoldCall(CallOp::kAbs, DataType::Int64(), {Expr(-5)})), 5);
}

TEST(FoldCallTest, OpaqueCallsAndNonImmediateArgumentsAreNotFolded) {
  Var x("x", DataType::Float32());
  EXPECT_FALSE(FoldCall(CallOp::kExp, DataType::Float32(), {x}).defined());
  EXPECT_FALSE(FoldCall(CallOp::kExtern, DataType::Float32(), {F32(1.0)}).defined());
  EXPECT_FALSE(FoldCall(CallOp::kExp, DataType::Float32(), {}).defined());
}

}  // namespace
}  // namespace arith
}  // namespace tessera
