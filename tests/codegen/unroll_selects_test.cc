// ExpandUnrolledSelects (codegen/unroll_selects.cc): an unrolled loop whose body selects on its
// variable becomes one copy per iteration with the selects folded; loops that are not unrolled,
// or whose selects do not test their variable, stay; the C backend computes what the unscheduled
// function computes.
#include "codegen/unroll_selects.h"

#include <vector>

#include "codegen/lower.h"
#include "frontend/compute.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

int Loops(const Stmt& s) {
  int count = 0;
  PostOrderVisitStmts(s, [&](const Stmt& st) { count += st.as<ForNode>() != nullptr; });
  return count;
}

// y[i, e, c] = x[i, c], 2 x[i, c] or x[i, c] + y's row (e = 0, 1, 2): one expression per e.
PrimFunc ThreePoints() {
  Tensor x = Placeholder({4, 16}, DataType::Float32(), "x");
  Tensor b = Placeholder({16}, DataType::Float32(), "b");
  Tensor y = Compute({4, 3, 16},
                     [&](const std::vector<Var>& i) {
                       const Expr v = x({i[0], i[2]});
                       const Expr two = MakeConst(DataType::Float32(), 2);
                       return Select(EQ(i[1], Expr(0)), v,
                                     Select(EQ(i[1], Expr(1)), two * v, v + b({i[2]})));
                     },
                     "y", {}, {"i", "e", "c"});
  return *CreatePrimFunc("main", {x, b, y});
}

// The e loop marked unrolled when `unroll`.
Schedule Scheduled(const PrimFunc& func, bool unroll) {
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("y"));
  if (unroll) {
    EXPECT_TRUE(sch.Unroll(loops[1]).ok());
  }
  EXPECT_TRUE(sch.Vectorize(loops[2]).ok());
  return sch;
}

TEST(UnrollSelectsTest, EachPointGetsItsOwnCopyWithoutSelects) {
  const PrimFunc func = ThreePoints();
  Schedule sch = Scheduled(func, /*unroll=*/true);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const PrimFunc expanded = ExpandUnrolledSelects(*lowered);
  EXPECT_EQ(testing::CountSelects(expanded.body()), 0) << PrintStmt(expanded.body());
  // i, then three copies of the c loop in place of (e, c).
  EXPECT_EQ(Loops(lowered->body()), 3);
  EXPECT_EQ(Loops(expanded.body()), 4) << PrintStmt(expanded.body());
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(UnrollSelectsTest, LoopsThatAreNotUnrolledStay) {
  const PrimFunc func = ThreePoints();
  Schedule sch = Scheduled(func, /*unroll=*/false);
  absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(ExpandUnrolledSelects(*lowered).body().same_as(lowered->body()));
  absl::Status built = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// A padding-like order test on the unrolled loop, or a select on another variable.
TEST(UnrollSelectsTest, UnrolledLoopsWithoutACaseSelectOnThemStay) {
  Tensor x = Placeholder({4, 16}, DataType::Float32(), "x");
  Tensor y = Compute(
      {4, 16},
      [&](const std::vector<Var>& i) {
        return Select(LT(i[1], Expr(8)), x({i[0], i[1]}), MakeConst(DataType::Float32(), 0));
      },
      "y");
  const PrimFunc func = *CreatePrimFunc("main", {x, y});
  for (int unrolled : {0, 1}) {
    Schedule sch = Schedule::Create(func, 0);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("y"));
    ASSERT_TRUE(sch.Unroll(loops[unrolled]).ok());
    absl::StatusOr<PrimFunc> lowered = LowerForCodegen(sch.func());
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    EXPECT_TRUE(ExpandUnrolledSelects(*lowered).body().same_as(lowered->body())) << unrolled;
  }
}

}  // namespace
}  // namespace tessera
