// The CPU default schedule (rules/default/cpu_default.cc): a matmul is register-tiled
// (parallel, vectorized and unrolled loops, a local accumulator).
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/default/default_rule.h"
#include "schedule/tensor_intrin.h"
#include "schedule/trace.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using default_schedule_testing::ApplyToModule;
using default_schedule_testing::CpuTarget;

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

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// A GEMV's sum over contiguous rows is factored into vector lanes: a local array of partial sums
// per row, the lane loop vectorized, rows in parallel; and it still computes the GEMV.
TEST(DefaultScheduleRuleTest, CpuContiguousSumIsSplitIntoVectorLanes) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GEMV", {{"M", 64}, {"K", 256}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  std::set<ForKind> kinds;
  int local_buffers = 0;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) kinds.insert(loop->for_kind);
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) {
        if (b.scope() == "local") ++local_buffers;
      }
    }
  });
  EXPECT_TRUE(kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  EXPECT_EQ(local_buffers, 1) << PrintFunc(scheduled);
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/1, 30);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The loop kinds and intermediate buffers (scope, shape) of a scheduled function.
struct ScheduleShape {
  std::set<ForKind> kinds;
  std::vector<Buffer> buffers;
  int64_t unrolled_extent = 0;  // the extent of the (last) unrolled loop
};

ScheduleShape ShapeOf(const PrimFunc& scheduled) {
  ScheduleShape shape;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      shape.kinds.insert(loop->for_kind);
      if (loop->for_kind == ForKind::kUnrolled) {
        if (const auto* extent = loop->extent.as<IntImmNode>()) {
          shape.unrolled_extent = extent->value;
        }
      }
    }
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) shape.buffers.push_back(b);
    }
  });
  return shape;
}

// The constant shape of the first intermediate of `scope` (empty if none).
std::vector<int64_t> ShapeOfScope(const ScheduleShape& shape, const std::string& scope) {
  for (const Buffer& b : shape.buffers) {
    if (b.scope() != scope) continue;
    std::vector<int64_t> dims;
    for (const Expr& d : b.shape()) {
      const auto* value = d.as<IntImmNode>();
      dims.push_back(value != nullptr ? value->value : -1);
    }
    return dims;
  }
  return {};
}

void ExpectMatchesReference(const PrimFunc& scheduled, const PrimFunc& func) {
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, func, CpuTarget(), /*seed=*/3, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
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

// An NHWC convolution is register-tiled with output pixels as rows: a local accumulator of
// rows x 64 channels (12 = 6 x 2 pixels: 6 rows), the row loop unrolled, the channel loop
// vectorized.
TEST(DefaultScheduleRuleTest, CpuConvolutionIsRegisterTiledOverPixels) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", {{"N", 1},
                                                       {"H", 6},
                                                       {"W", 12},
                                                       {"CI", 16},
                                                       {"CO", 64},
                                                       {"K", 3},
                                                       {"stride", 1},
                                                       {"padding", 1}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  EXPECT_EQ(shape.unrolled_extent, 6) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// Output channels no vector tile divides (24) and a prime width (7) fall back to one pixel per
// tile and still compute the convolution; so does a 2-channel output.
TEST(DefaultScheduleRuleTest, CpuConvolutionOnOddShapesMatchesReference) {
  for (const auto& [width, channels] : {std::pair<int64_t, int64_t>{7, 24}, {10, 2}, {5, 64}}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", {{"N", 1},
                                                         {"H", 5},
                                                         {"W", width},
                                                         {"CI", 3},
                                                         {"CO", channels},
                                                         {"K", 3},
                                                         {"stride", 1},
                                                         {"padding", 1}});
    ASSERT_TRUE(func.ok()) << func.status();
    SCOPED_TRACE("W=" + std::to_string(width) + " CO=" + std::to_string(channels));
    ExpectMatchesReference(ApplyToModule(*func, CpuTarget()).second, *func);
  }
}

}  // namespace
}  // namespace tessera
