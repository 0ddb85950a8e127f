// MoveUnrolledTermsLast (codegen/unrolled_offsets.cc): under an unrolled loop, the summands of a
// flat index that use its variable come last, the others keep their order; indices outside
// unrolled loops are untouched; the C backend still computes the unscheduled function's result.
#include "codegen/unrolled_offsets.h"

#include <string>
#include <vector>

#include "codegen/lower.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

// The top-level summands of an integer sum (+ and -), in order.
void Summands(const Expr& e, std::vector<Expr>* out) {
  const auto* op = e.as<BinaryNode>();
  if (op != nullptr && (op->op == BinaryOp::kAdd || op->op == BinaryOp::kSub)) {
    Summands(op->a, out);
    Summands(op->b, out);
    return;
  }
  out->push_back(e);
}

bool UsesVarNamed(const Expr& e, const std::string& name) {
  return UsesVar(e, [&](const VarNode* v) { return v->name == name; });
}

// GMM 8x16x8 with i split [2, 4] and the inner i_1 unrolled innermost: A[i, k] is read at
// `i_0 * 32 + i_1 * 8 + k` (flattened), i_1 in the middle.
Schedule UnrolledRows(const PrimFunc& func) {
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> i = *sch.Split(loops[1], {InstValue::Int(2), InstValue::Int(4)});
  EXPECT_TRUE(sch.Reorder({i[0], loops[2], loops[3], i[1]}).ok());
  EXPECT_TRUE(sch.Unroll(i[1]).ok());
  return sch;
}

TEST(UnrolledOffsetsTest, TermsOfUnrolledLoopsComeLast) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"B", 1}, {"M", 8}, {"N", 16}, {"K", 8}});
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = UnrolledRows(*func);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const PrimFunc moved = MoveUnrolledTermsLast(*lowered);
  int reads_of_a = 0;
  PostOrderVisitExprs(moved.body(), [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (load == nullptr || load->buffer.name() != "A") return;
    ++reads_of_a;
    std::vector<Expr> terms;
    Summands(load->indices[0], &terms);
    ASSERT_GE(terms.size(), 2u) << PrintExpr(e);
    EXPECT_TRUE(UsesVarNamed(terms.back(), "i_1")) << PrintExpr(e);
    for (size_t t = 0; t + 1 < terms.size(); ++t) {
      EXPECT_FALSE(UsesVarNamed(terms[t], "i_1")) << PrintExpr(e);
    }
  });
  EXPECT_EQ(reads_of_a, 1) << PrintStmt(moved.body());
  absl::Status built = testing::CheckCBackendMatches(*func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(UnrolledOffsetsTest, FunctionWithoutUnrolledLoopsIsReturnedUnchanged) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"B", 1}, {"M", 8}, {"N", 16}, {"K", 8}});
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(*func);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(MoveUnrolledTermsLast(*lowered).body().same_as(lowered->body()));
}

}  // namespace
}  // namespace tessera
