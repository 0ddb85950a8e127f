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

// The loops of `f`, outermost first: kind and constant extent (-1 if not constant).
std::vector<std::pair<ForKind, int64_t>> Loops(const PrimFunc& f) {
  std::vector<std::pair<ForKind, int64_t>> loops;
  PostOrderVisitStmts(f->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      const int64_t* extent = AsConstInt(loop->extent);
      loops.insert(loops.begin(), {loop->for_kind, extent ? *extent : -1});
    }
  });
  return loops;
}

// `scheduled` computes `func` (built with the C builder, on random inputs).
void ExpectComputes(const PrimFunc& scheduled, const PrimFunc& func) {
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, func, CpuTarget(), /*seed=*/5, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
}

// Input rows of 40 floats: the tile's output rows vectorized. Rows of at most 32 (an NHWC image
// of 32 channels moved back to NCHW): both tile loops unrolled instead, no gather per vector.
TEST(CpuTransposeTest, TransposeMovesParallelTilesWithVectorOrUnrolledRows) {
  for (const auto& [n, inner] :
       std::vector<std::pair<int64_t, ForKind>>{{40, ForKind::kSerial}, {32, ForKind::kUnrolled}}) {
    SCOPED_TRACE("N=" + std::to_string(n));
    absl::StatusOr<PrimFunc> func = MakeWorkload("TRANSPOSE", {{"M", 48}, {"N", n}});
    ASSERT_TRUE(func.ok()) << func.status();
    auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
    ASSERT_EQ(rule, "CpuTranspose");
    const ForKind rows = inner == ForKind::kUnrolled ? ForKind::kUnrolled : ForKind::kVectorized;
    const std::vector<std::pair<ForKind, int64_t>> expected = {
        {ForKind::kParallel, 6 * (n / 8)}, {inner, 8}, {rows, 8}};
    EXPECT_EQ(Loops(scheduled), expected) << PrintFunc(scheduled);
    ExpectComputes(scheduled, *func);
  }
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
    const std::vector<std::pair<ForKind, int64_t>> want = {{ForKind::kParallel, 17},
                                                           {expected, rows}};
    EXPECT_EQ(Loops(scheduled), want) << PrintFunc(scheduled);
    ExpectComputes(scheduled, *func);
  }
}

}  // namespace
}  // namespace tessera
