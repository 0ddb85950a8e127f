// UnswitchBorders (codegen/unswitch_borders.cc): under a loop annotated kUnswitchBorders, a
// depthwise convolution's padding selects are replaced in a copy of the body taken where they
// all hold (the interior tiles) and kept in the other; selects that cannot hold for a whole
// iteration, and loops without the annotation, are left alone; the C backend computes what the
// unscheduled convolution computes.
#include "codegen/unswitch_borders.h"

#include <vector>

#include "codegen/lower.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

// The loop annotated kUnswitchBorders in `s`, or nullptr.
const ForNode* AnnotatedLoop(const Stmt& s) {
  const ForNode* found = nullptr;
  PostOrderVisitStmts(s, [&](const Stmt& st) {
    const auto* loop = st.as<ForNode>();
    if (loop != nullptr && loop->annotations.count(kUnswitchBorders) > 0) found = loop;
  });
  return found;
}

// DEP 6x12x16 (3x3, padding 1) with its padding inlined and w split by `pixels`; the loops
// (n, h, w_o) fused, annotated when `annotate`, and when `tile_width` w_o is among them (else the
// whole width is inside the annotated loop, where its padding taps are never all in bounds).
Schedule Depthwise(const PrimFunc& func, bool annotate, bool tile_width) {
  Schedule sch = Schedule::Create(func, 0);
  EXPECT_TRUE(sch.ComputeInline(*sch.GetBlock("PadInput")).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("depth_conv2d_nhwc"));
  std::vector<LoopRV> outer = {loops[0], loops[1]};
  if (tile_width) {
    std::vector<LoopRV> w = *sch.Split(loops[2], {InstValue::Int(3), InstValue::Int(4)});
    outer.push_back(w[0]);
  }
  const LoopRV fused = *sch.Fuse(outer);
  if (annotate) {
    EXPECT_TRUE(sch.Annotate(fused, kUnswitchBorders, InstValue::Int(1)).ok());
  }
  return sch;
}

absl::StatusOr<PrimFunc> Workload() {
  return MakeWorkload(
      "DEP", {{"N", 1}, {"H", 6}, {"W", 12}, {"C", 16}, {"K", 3}, {"stride", 1}, {"padding", 1}});
}

TEST(UnswitchBordersTest, InteriorIterationsRunWithoutThePaddingTests) {
  absl::StatusOr<PrimFunc> func = Workload();
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Depthwise(*func, /*annotate=*/true, /*tile_width=*/true);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const PrimFunc unswitched = UnswitchBorders(*lowered);
  const ForNode* tile = AnnotatedLoop(unswitched.body());
  ASSERT_NE(tile, nullptr) << PrintStmt(unswitched.body());
  // for t: if (interior(t)) <body without selects> else <body as lowered>.
  const auto* branch = tile->body.as<IfThenElseNode>();
  ASSERT_NE(branch, nullptr) << PrintStmt(unswitched.body());
  ASSERT_TRUE(branch->else_case.defined());
  EXPECT_EQ(testing::CountSelects(branch->then_case), 0) << PrintStmt(branch->then_case);
  EXPECT_EQ(testing::CountSelects(branch->else_case), testing::CountSelects(lowered->body()));
  // Interior: rows 1..4 (their taps read rows 0..5) and the middle tile of columns 4..7 (the
  // first reads column -1, the last column 12): 4 of the 6 x 3 tiles.
  int interior = 0;
  for (int64_t t = 0; t < 18; ++t) {
    VarMap at;
    at[tile->loop_var] = Expr(t);
    const Expr value = arith::Simplify(Substitute(branch->condition, at));
    ASSERT_NE(AsConstInt(value), nullptr) << PrintExpr(value);
    interior += *AsConstInt(value) != 0;
  }
  EXPECT_EQ(interior, 4);
  absl::Status built = testing::CheckCBackendMatches(*func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(UnswitchBordersTest, LeavesLoopsWithoutTheAnnotationOrAnInteriorAlone) {
  absl::StatusOr<PrimFunc> func = Workload();
  ASSERT_TRUE(func.ok()) << func.status();
  for (auto [annotate, tile_width] : {std::pair(false, true), std::pair(true, false)}) {
    SCOPED_TRACE(annotate ? "annotated, the whole width inside" : "not annotated");
    Schedule sch = Depthwise(*func, annotate, tile_width);
    absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    EXPECT_TRUE(UnswitchBorders(*lowered).body().same_as(lowered->body()));
    absl::Status built = testing::CheckCBackendMatches(*func, sch.func());
    EXPECT_TRUE(built.ok()) << built;
  }
}

}  // namespace
}  // namespace tessera
