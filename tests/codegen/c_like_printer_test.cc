// Tests of codegen/c_like_printer.cc, the part the C and CUDA emitters share, through a small
// dialect that prints stores and loops plainly: identifiers (sanitized, unique, never reserved),
// the first error kept, integer floordiv/floormod as C's / and % only where the dividend is
// provably non-negative, min/max through the dialect's helpers, and if-then-else lines.
#include "codegen/c_like_printer.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/stmt.h"

namespace tessera {
namespace codegen_internal {
namespace {

const std::set<std::string>& Reserved() {
  static const std::set<std::string> names = {"for", "int"};
  return names;
}

// A dialect with spellings that show which hook printed what.
class TestPrinter : public CLikePrinter {
 public:
  explicit TestPrinter(std::string* out)
      : CLikePrinter({"test", &Reserved(), " (never bound)", "blocks remain"}, out) {}

  using CLikePrinter::BindLoopVar;
  using CLikePrinter::Define;
  using CLikePrinter::EmitStmt;
  using CLikePrinter::Fail;
  using CLikePrinter::NameOf;
  using CLikePrinter::PrintExpr;

 protected:
  void EmitStore(const BufferStoreNode* op) override {
    Line(PrintAccess(op->buffer, op->indices) + " = " + StripParens(PrintExpr(op->value)) + ";");
  }
  void EmitFor(const ForNode*) override { Line("for"); }
  void EmitAllocate(const AllocateNode*) override { Line("alloc"); }
  std::string IntegerType(DataType t) const override { return "int" + std::to_string(t.bits()); }
  std::string BoolLiteral(bool v) const override { return v ? "yes" : "no"; }
  std::string WideIntLiteral(DataType, int64_t v) const override { return std::to_string(v); }
  std::string SpecialFloatLiteral(DataType, double) const override { return "special"; }
  std::string HelperName(const std::string& helper, DataType t) const override {
    return absl::StrCat("h_", helper, "_", t.bits());
  }
  std::string SignedIntFloorOp(BinaryOp op, DataType, const std::string& a,
                               const std::string& b) const override {
    return absl::StrCat(op == BinaryOp::kFloorDiv ? "fdiv" : "fmod", "(", a, ", ", b, ")");
  }
  std::string LoadValue(DataType, const std::string& access) const override { return access; }
  std::string RoundToHalf(DataType, DataType, const std::string& v) const override { return v; }
};

TEST(CLikePrinterTest, StripParensRemovesOnlyAnEnclosingPair) {
  EXPECT_EQ(StripParens("(a + b)"), "a + b");
  EXPECT_EQ(StripParens("(a) + (b)"), "(a) + (b)");  // two groups: nothing encloses all
  EXPECT_EQ(StripParens("((a))"), "(a)");
  EXPECT_EQ(StripParens("a"), "a");
}

TEST(CLikePrinterTest, DefineMakesValidUniqueUnreservedIdentifiers) {
  std::string out;
  TestPrinter p(&out);
  int keys[6];
  EXPECT_EQ(p.Define(&keys[0], "i"), "i");
  EXPECT_EQ(p.Define(&keys[1], "i"), "i_1");
  EXPECT_EQ(p.Define(&keys[2], "for"), "for_1");
  EXPECT_EQ(p.Define(&keys[3], "a.b"), "a_b");
  EXPECT_EQ(p.Define(&keys[4], "1x"), "v_1x");
  EXPECT_EQ(p.Define(&keys[5], "tessera_x"), "v_tessera_x");
  EXPECT_EQ(p.NameOf(&keys[1], "i"), "i_1");
}

TEST(CLikePrinterTest, FirstErrorIsKept) {
  std::string out;
  TestPrinter p(&out);
  int never;
  p.NameOf(&never, "q");
  p.Fail("second");
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "test codegen: free variable q (never bound)");
}

TEST(CLikePrinterTest, FloorDivisionIsCDivisionOnlyForNonNegativeDividends) {
  std::string out;
  TestPrinter p(&out);
  Var i("i"), k("k");
  p.Define(i.get(), "i");
  p.Define(k.get(), "k");
  p.BindLoopVar(i, Expr(16));
  EXPECT_EQ(p.PrintExpr(FloorDiv(i, 4)), "(i / 4)");
  EXPECT_EQ(p.PrintExpr(FloorMod(i, 4)), "(i % 4)");
  EXPECT_EQ(p.PrintExpr(FloorDiv(k, 4)), "fdiv(k, 4)");  // k may be negative
  EXPECT_EQ(p.PrintExpr(FloorMod(i - 8, 4)), "fmod((i - 8), 4)");
  EXPECT_EQ(p.PrintExpr(Min(i, k)), "h_min_64(i, k)");
  EXPECT_TRUE(p.status().ok()) << p.status();
}

TEST(CLikePrinterTest, IfThenElseIndentsItsBranches) {
  std::string out;
  TestPrinter p(&out);
  Var i("i");
  p.Define(i.get(), "i");
  Buffer a = Buffer::Make("A", DataType::Int64(), {Expr(4)});
  p.Define(a.get(), "A");
  p.EmitStmt(IfThenElse(LT(i, 2), BufferStore(a, Expr(1), {i}), BufferStore(a, Expr(0), {i})));
  EXPECT_TRUE(p.status().ok()) << p.status();
  EXPECT_EQ(out, "if (i < 2) {\n  A[i] = 1;\n} else {\n  A[i] = 0;\n}\n");
}

}  // namespace
}  // namespace codegen_internal
}  // namespace tessera
