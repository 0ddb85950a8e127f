// Tests of the text printer: exact output for expressions and statements, name
// disambiguation, float formatting, and the golden text of a matmul.
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/random.h"
#include "gtest/gtest.h"
#include "tests/ir/text_test_functions.h"

namespace tessera {
namespace {

std::string ReadGolden(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/golden/ir/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PrinterTest, MatmulMatchesGolden) {
  std::string golden = ReadGolden("matmul.ir");
  ASSERT_FALSE(golden.empty()) << "missing tests/golden/ir/matmul.ir";
  EXPECT_EQ(PrintFunc(text_test::Matmul()), golden);
}

TEST(PrinterTest, InfixUsesMinimalParentheses) {
  Var a("a"), b("b"), c("c");
  EXPECT_EQ(PrintExpr((a + b) * c), "(a + b) * c");
  EXPECT_EQ(PrintExpr(a + b * c), "a + b * c");
  EXPECT_EQ(PrintExpr((a + b) + c), "a + b + c");
  EXPECT_EQ(PrintExpr(a + (b + c)), "a + (b + c)");
  EXPECT_EQ(PrintExpr(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(PrintExpr(Div(a * b, c * a)), "a * b / (c * a)");
  EXPECT_EQ(PrintExpr(And(Or(LT(a, b), GT(b, c)), Not(EQ(a, c)))), "(a < b || b > c) && !(a == c)");
  EXPECT_EQ(PrintExpr(Or(And(LT(a, b), GT(b, c)), LE(a, c))), "a < b && b > c || a <= c");
  // Comparisons never chain without parentheses.
  EXPECT_EQ(PrintExpr(EQ(LT(a, b), GE(b, c))), "(a < b) == (b >= c)");
  EXPECT_EQ(PrintExpr(-a), "0 - a");
  EXPECT_EQ(PrintExpr(Expr(-5) * a), "-5 * a");
  EXPECT_EQ(PrintExpr(a - Expr(-5)), "a - -5");
  EXPECT_EQ(PrintExpr(Not(Not(LT(a, b)))), "!!(a < b)");
}

TEST(PrinterTest, FunctionStyleOperatorsAndCalls) {
  Var a("a"), b("b");
  Var x("x", DataType::Float32());
  EXPECT_EQ(PrintExpr(FloorDiv(a + 1, b) * FloorMod(a, 4)), "floordiv(a + 1, b) * floormod(a, 4)");
  EXPECT_EQ(PrintExpr(Min(a, Max(b, 3))), "min(a, max(b, 3))");
  EXPECT_EQ(PrintExpr(Select(LT(a, b), a, b)), "select(a < b, a, b)");
  EXPECT_EQ(PrintExpr(Call(CallOp::kExp, {x})), "exp(x)");
  EXPECT_EQ(PrintExpr(Call(CallOp::kPow, {x, FloatImm(DataType::Float32(), 2)})),
            "pow(x, float32(2.0))");
  EXPECT_EQ(PrintExpr(Cast(DataType::Float16(), x)), "float16(x)");
  EXPECT_EQ(PrintExpr(CallExtern(DataType::Int32(), "__dp4a", {a, b, Expr(0)})),
            "call_extern(int32, \"__dp4a\", a, b, 0)");
  EXPECT_EQ(PrintExpr(CallExtern(DataType::Float32(), "sync", {})),
            "call_extern(float32, \"sync\")");
}

TEST(PrinterTest, ImmediatesShowTheirDtypeUnlessInt64) {
  EXPECT_EQ(PrintExpr(Expr(5)), "5");
  EXPECT_EQ(PrintExpr(Expr(-5)), "-5");
  EXPECT_EQ(PrintExpr(IntImm(DataType::Int32(), 7)), "int32(7)");
  EXPECT_EQ(PrintExpr(IntImm(DataType::UInt8(), 255)), "uint8(255)");
  EXPECT_EQ(PrintExpr(IntImm(DataType::Int8(), -3)), "int8(-3)");
  EXPECT_EQ(PrintExpr(True()), "True");
  EXPECT_EQ(PrintExpr(False()), "False");
  EXPECT_EQ(PrintExpr(FloatImm(DataType::Float16(), 0.5)), "float16(0.5)");
  EXPECT_EQ(PrintExpr(FloatImm(DataType::BFloat16(), 1)), "bfloat16(1.0)");
  EXPECT_EQ(PrintExpr(FloatImm(DataType::Float32(), -std::numeric_limits<double>::infinity())),
            "float32(-inf)");
  EXPECT_EQ(PrintExpr(FloatImm(DataType::Float64(), std::nan(""))), "float64(nan)");
  EXPECT_EQ(PrintExpr(FloatImm(DataType::Float32(), std::numeric_limits<float>::max())),
            "float32(3.4028234663852886e+38)");
}

TEST(PrinterTest, CastOfImmediateIsSpelledOut) {
  // `float32(5)` would read back as an immediate.
  EXPECT_EQ(PrintExpr(Cast(DataType::Float32(), Expr(5))), "cast(float32, 5)");
  EXPECT_EQ(PrintExpr(Cast(DataType::Int32(), FloatImm(DataType::Float64(), 2.5))),
            "cast(int32, float64(2.5))");
}

TEST(PrinterTest, FormatDoubleIsShortestAndExact) {
  EXPECT_EQ(FormatDouble(1.0), "1.0");
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(-0.0), "-0.0");
  EXPECT_EQ(FormatDouble(1e300), "1e+300");
  EXPECT_EQ(FormatDouble(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(FormatDouble(std::numeric_limits<double>::infinity()), "inf");
  Random rng(7);
  for (int n = 0; n < 5000; ++n) {
    uint64_t bits = (rng.Next() << 33) ^ (rng.Next() << 2) ^ rng.Next();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    if (!std::isfinite(value)) continue;
    std::string text = FormatDouble(value);
    double back = 0;
    auto result = std::from_chars(text.data(), text.data() + text.size(), back);
    ASSERT_EQ(result.ec, std::errc()) << text;
    ASSERT_EQ(std::memcmp(&back, &value, sizeof(value)), 0) << text;
  }
}

TEST(PrinterTest, ClashingNamesAreDisambiguated) {
  Var i1("i"), i2("i"), weird("A.x"), reserved("for"), empty("");
  EXPECT_EQ(PrintExpr(i1 + i2 * i1), "i + i_1 * i");
  EXPECT_EQ(PrintExpr(weird + reserved + empty), "A_x + for_1 + v");
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(4)});
  Buffer a2 = Buffer::Make("A", DataType::Float32(), {Expr(4)});
  EXPECT_EQ(PrintStmt(BufferStore(a, a2.Load({Expr(0)}), {Expr(1)})), "A[1] = A_1[0]\n");
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

TEST(PrinterTest, LoopKindsTagsAndAnnotations) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(64)});
  Var i("i"), k("k", DataType::Int32());
  Stmt store = BufferStore(a, FloatImm(DataType::Float32(), 1), {i});
  EXPECT_EQ(PrintStmt(For(i, 64, ForKind::kSerial, store)),
            "for i in range(64):\n    A[i] = float32(1.0)\n");
  EXPECT_EQ(PrintStmt(For(i, 64, ForKind::kParallel, store)),
            "for i in parallel(64):\n    A[i] = float32(1.0)\n");
  EXPECT_PRED2(StartsWith, PrintStmt(For(i, 64, ForKind::kVectorized, store)),
               "for i in vectorized(64):\n");
  EXPECT_PRED2(StartsWith, PrintStmt(For(i, 64, ForKind::kUnrolled, store)),
               "for i in unroll(64):\n");
  EXPECT_PRED2(StartsWith, PrintStmt(For(i, 64, ForKind::kThreadBinding, store, "threadIdx.x")),
               "for i in thread_binding(64, \"threadIdx.x\"):\n");
  Annotations ann = {{"pragma_auto_unroll_max_step", int64_t{512}}, {"note", std::string("x")}};
  EXPECT_PRED2(StartsWith, PrintStmt(For(i, 64, ForKind::kSerial, store, "", ann)),
               "for i in range(64, annotations={\"note\": \"x\", "
               "\"pragma_auto_unroll_max_step\": 512}):\n");
  EXPECT_EQ(PrintStmt(For(k, IntImm(DataType::Int32(), 8), ForKind::kSerial,
                          Evaluate(Cast(DataType::Int64(), k)))),
            "for k: int32 in range(int32(8)):\n    evaluate(int64(k))\n");
}

TEST(PrinterTest, BlockWithPredicateSlicesAllocsAndInit) {
  std::string text = PrintFunc(text_test::SplitWithPredicate());
  const std::string pad(20, ' ');
  EXPECT_NE(
      text.find(pad + "v = axis.spatial(100, i_0 * 32 + i_1)\n" + pad +
                "where(i_0 * 32 + i_1 < 100)\n" + pad + "reads(A[v])\n" + pad + "writes(B[v])\n"),
      std::string::npos)
      << text;
  text = PrintFunc(text_test::SharedAlloc());
  EXPECT_NE(text.find("A_shared = alloc_buffer((64, 64), \"float32\", scope=\"shared\", "
                      "strides=(65, 1))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reads(A_shared[vi_1, 0:64])"), std::string::npos) << text;
  EXPECT_NE(text.find("with block(\"A.shared\"):"), std::string::npos) << text;
  text = PrintFunc(text_test::Everything());
  EXPECT_NE(text.find("v_i = axis.spatial(2:14, i_1 + 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("vr = axis.reduce(u:u + 8, int64(k))"), std::string::npos) << text;
  EXPECT_NE(text.find("reads(A[v_i:v_i + 2, 0:8], A_1[v_i * 2:v_i * 2 + (vr + 1)], s[()])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("with allocate((4,), \"float32\", scope=\"local\") as tmp:"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("@prim_func(name=\"every.thing\")\ndef every_thing("), std::string::npos)
      << text;
}

TEST(PrinterTest, ModuleIsSortedByNameAndDeterministic) {
  IRModule mod;
  mod.Update(text_test::SplitWithPredicate());
  mod.Update(text_test::Matmul());
  std::string text = PrintModule(mod);
  EXPECT_LT(text.find("def matmul("), text.find("def split("));
  EXPECT_EQ(text,
            PrintFunc(text_test::Matmul()) + "\n" + PrintFunc(text_test::SplitWithPredicate()));
  EXPECT_EQ(PrintModule(mod), text);
}

}  // namespace
}  // namespace tessera
