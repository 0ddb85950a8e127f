// TiledMatmul (rules/default/tiled_matmul.cc) at the default's point of its space
// (DefaultMatmulTiling, as CpuDefault applies it): a GEMM is register-tiled (parallel, vectorized
// and unrolled loops, a local accumulator), column panels of B are packed (DENSE's weight
// transposed in the copy), panels narrow for long reductions, and odd shapes still compute the
// product. Sampled tilings of every layout are tested through PackedPanelGemm
// (tests/rules/rule/packed_panel_gemm_test.cc).
#include <set>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "tests/rules/default_schedule_testing.h"

namespace tessera {
namespace {

using default_schedule_testing::ApplyToModule;
using default_schedule_testing::CpuTarget;
using default_schedule_testing::ExpectMatchesReference;
using default_schedule_testing::ScheduleShape;
using default_schedule_testing::ShapeOf;
using default_schedule_testing::ShapeOfScope;

TEST(DefaultScheduleRuleTest, CpuMatmulIsRegisterTiled) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM");
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  std::set<ForKind> kinds;
  std::set<std::string> scopes;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) kinds.insert(loop->for_kind);
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) scopes.insert(b.scope());
    }
  });
  EXPECT_TRUE(kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kUnrolled)) << PrintFunc(scheduled);
  EXPECT_TRUE(scopes.count("local")) << PrintFunc(scheduled);
}

// A GEMM wide enough for 4+ column panels copies each K x 64 panel of B into a contiguous
// buffer (a global intermediate of B's shape) and computes the same product.
TEST(DefaultScheduleRuleTest, CpuMatmulPacksColumnPanelsOfB) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 16}, {"N", 256}, {"K", 48}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfScope(shape, "global"), (std::vector<int64_t>{1, 48, 256}))
      << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfScope(shape, "local"), (std::vector<int64_t>{1, 16, 256}))
      << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// DENSE reads its weight as W[J, K]: the packed copy is transposed to [K, J], so the register
// tile reads contiguous vectors of columns instead of a gather. Odd M (13) leaves a partial row
// tile.
TEST(DefaultScheduleRuleTest, CpuDenseTransposesPackedWeight) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("DENSE_BIAS_RELU", {{"M", 13}, {"N", 256}, {"K", 40}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_EQ(ShapeOfScope(shape, "global"), (std::vector<int64_t>{40, 256})) << PrintFunc(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// A long reduction (K = 2100: a 64-column panel would take 525 KiB) gets 32-column panels and
// 8-row tiles (the same 16 accumulators), and still computes the product.
TEST(DefaultScheduleRuleTest, CpuMatmulNarrowsPanelsForLongReductions) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 9}, {"N", 128}, {"K", 2100}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_EQ(shape.unrolled_extent, 8) << PrintFunc(scheduled);
  EXPECT_EQ(ShapeOfScope(shape, "global"), (std::vector<int64_t>{1, 2100, 128}))
      << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// Shapes no tile divides (a prime N = 257: four full panels and one of 1 column; M = 7, K = 29)
// still compute the product.
TEST(DefaultScheduleRuleTest, CpuMatmulOnOddShapesMatchesReference) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM", {{"M", 7}, {"N", 257}, {"K", 29}});
  ASSERT_TRUE(func.ok()) << func.status();
  ExpectMatchesReference(ApplyToModule(*func, CpuTarget()).second, *func);
}

}  // namespace
}  // namespace tessera
