// The CPU transpose default (rules/default/cpu_transpose.cc): a transpose is moved in 8 x 8 tiles
// (tiles parallel, the tile's output rows vectorized, or the whole tile unrolled where the input
// rows are short) and still computes the transpose; shapes
// that 8 does not divide and elementwise functions without a transposed read are left to
// CpuDefault.
#include <map>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "tests/rules/default_schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"

namespace tessera {
namespace {

using default_schedule_testing::ApplyToModule;
using default_schedule_testing::CpuTarget;

TEST(CpuTransposeTest, TransposeMovesParallelTilesWithVectorRows) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("TRANSPOSE", {{"M", 48}, {"N", 40}});
  ASSERT_TRUE(func.ok()) << func.status();
  auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
  ASSERT_EQ(rule, "CpuTranspose");
  std::vector<std::pair<ForKind, int64_t>> loops;  // outermost first
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      const int64_t* extent = AsConstInt(loop->extent);
      loops.insert(loops.begin(), {loop->for_kind, extent ? *extent : -1});
    }
  });
  const std::vector<std::pair<ForKind, int64_t>> expected = {
      {ForKind::kParallel, 6 * 5}, {ForKind::kSerial, 8}, {ForKind::kVectorized, 8}};
  EXPECT_EQ(loops, expected) << PrintFunc(scheduled);
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/5, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
}

// Input rows of at most 32 floats (an NHWC image of 32 channels moved back to NCHW): the tile's
// loops are both unrolled instead (no gather per vector), and it still computes the transpose.
TEST(CpuTransposeTest, ShortInputRowsUnrollTheTile) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("TRANSPOSE", {{"M", 48}, {"N", 32}});
  ASSERT_TRUE(func.ok()) << func.status();
  auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
  ASSERT_EQ(rule, "CpuTranspose");
  std::vector<std::pair<ForKind, int64_t>> loops;  // outermost first
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      const int64_t* extent = AsConstInt(loop->extent);
      loops.insert(loops.begin(), {loop->for_kind, extent ? *extent : -1});
    }
  });
  const std::vector<std::pair<ForKind, int64_t>> expected = {
      {ForKind::kParallel, 4 * 6}, {ForKind::kUnrolled, 8}, {ForKind::kUnrolled, 8}};
  EXPECT_EQ(loops, expected) << PrintFunc(scheduled);
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/7, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
}

TEST(CpuTransposeTest, LeavesOddShapesAndPlainElementwiseToCpuDefault) {
  const std::vector<std::pair<std::string, std::map<std::string, int64_t>>> cases = {
      {"TRANSPOSE", {{"M", 30}, {"N", 17}}}, {"ELEMENTWISE", {{"M", 64}, {"N", 64}}}};
  for (const auto& [name, shape] : cases) {
    absl::StatusOr<PrimFunc> func = MakeWorkload(name, shape);
    ASSERT_TRUE(func.ok()) << func.status();
    EXPECT_EQ(ApplyToModule(*func, CpuTarget()).first, "CpuDefault") << name;
  }
}

// Left to CpuDefault, a transpose whose output rows are shorter than a vector (an NCHW image of
// 3 channels moved channels-last: out[j, c] = in[c, j]) unrolls them rather than vectorizing a
// gather of 3 strided floats (7x slower on the Intel core); rows of a vector or more stay
// vectorized. Both still compute the transpose.
TEST(CpuTransposeTest, ShortStridedRowsAreUnrolledNotVectorized) {
  for (const auto& [rows, expected] : std::vector<std::pair<int64_t, ForKind>>{
           {3, ForKind::kUnrolled}, {30, ForKind::kVectorized}}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload("TRANSPOSE", {{"M", rows}, {"N", 17}});
    ASSERT_TRUE(func.ok()) << func.status();
    auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
    ASSERT_EQ(rule, "CpuDefault");
    std::vector<ForKind> kinds;  // outermost first
    PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
      if (const auto* loop = s.as<ForNode>()) kinds.insert(kinds.begin(), loop->for_kind);
    });
    const std::vector<ForKind> want = {ForKind::kParallel, expected};
    EXPECT_EQ(kinds, want) << PrintFunc(scheduled);
    absl::StatusOr<CheckOutcome> check =
        BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/3, 60);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
  }
}

}  // namespace
}  // namespace tessera
