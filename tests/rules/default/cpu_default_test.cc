// The CPU default schedule (rules/default/cpu_default.cc) on GEMVs and convolutions; its GEMM,
// TiledMatmul at the default's factors, is tested in tiled_matmul_test.cc.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/check.h"
#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/compute.h"
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
using default_schedule_testing::ConstantShape;
using default_schedule_testing::CpuTarget;
using default_schedule_testing::ExpectMatchesReference;
using default_schedule_testing::ScheduleShape;
using default_schedule_testing::ShapeOf;

// The last extents of the local buffers of a scheduled function (the partial sums per row).
std::multiset<int64_t> PartialSumsPerRow(const PrimFunc& scheduled) {
  std::multiset<int64_t> sizes;
  for (const Buffer& b : ShapeOf(scheduled).buffers) {
    if (b.scope() == "local") sizes.insert(ConstantShape(b).back());
  }
  return sizes;
}

// A GEMV's sum over contiguous rows is factored into vector lanes: a local array of partial sums
// per row, the lane loop vectorized, rows in parallel; and it still computes the GEMV. A row of
// 256 holds 4 iterations of 4 accumulator vectors (64 partial sums), which are added into one
// vector (16) before its lanes are summed.
TEST(DefaultScheduleRuleTest, CpuContiguousSumIsSplitIntoVectorLanes) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GEMV", {{"M", 64}, {"K", 256}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  EXPECT_EQ(PartialSumsPerRow(scheduled), (std::multiset<int64_t>{16, 64})) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// The unrolled loops of extent `extent` in `f`.
int UnrolledLoopsOf(const PrimFunc& f, int64_t extent) {
  int count = 0;
  PostOrderVisitStmts(f->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    count +=
        loop != nullptr && loop->for_kind == ForKind::kUnrolled && IsConstInt(loop->extent, extent);
  });
  return count;
}

// An elementwise nest whose value selects on a loop (a Winograd transform's points: one
// expression per point) unrolls that loop, or the part of it that a floormod tests, between the
// parallel loops and the vector loop; the C backend expands the copies (codegen/unroll_selects.h)
// and computes the function, also where 4 does not divide the loop.
TEST(DefaultScheduleRuleTest, CpuUnrollsTheLoopsAnElementwiseNestSelectsOn) {
  Tensor x = Placeholder({8, 6, 32}, DataType::Float32(), "x");
  const Expr two = MakeConst(DataType::Float32(), 2);
  Tensor by_point = Compute(
      {8, 6, 32},
      [&](const std::vector<Var>& i) {
        const Expr v = x({i[0], i[1], i[2]});
        return Select(EQ(i[1], Expr(0)), v, Select(EQ(i[1], Expr(5)), two * v, v + v * v));
      },
      "by_point");
  const PrimFunc points = *CreatePrimFunc("main", {x, by_point});
  const PrimFunc scheduled = ApplyToModule(points, CpuTarget()).second;
  EXPECT_EQ(UnrolledLoopsOf(scheduled, 6), 1) << PrintFunc(scheduled);
  EXPECT_TRUE(ShapeOf(scheduled).kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(ShapeOf(scheduled).kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, points);

  // 8 x 12 splits into whole groups of 4; 10 x 14 leaves a last group of 2 (a predicate).
  for (auto [height, width] : {std::pair<int64_t, int64_t>{8, 12}, {10, 14}}) {
    Tensor image = Placeholder({1, height, width, 32}, DataType::Float32(), "image");
    Tensor by_position = Compute(
        {1, height, width, 32},
        [&](const std::vector<Var>& i) {
          const Expr v = image({i[0], i[1], i[2], i[3]});
          const Expr row = Select(EQ(FloorMod(i[1], Expr(4)), Expr(0)), v, two * v);
          return Select(EQ(FloorMod(i[2], Expr(4)), Expr(3)), row + v, row);
        },
        "by_position");
    const PrimFunc positions = *CreatePrimFunc("main", {image, by_position});
    const PrimFunc tiled = ApplyToModule(positions, CpuTarget()).second;
    EXPECT_EQ(UnrolledLoopsOf(tiled, 4), 2) << PrintFunc(tiled);
    ExpectMatchesReference(tiled, positions);
  }
}

// A GEMV takes its rows four at a time inside the reduction loop (each vector of x loaded once
// for the four): an unrolled loop of 4 rows in the partial sums and in their init. A row sum
// reads nothing all rows share and keeps one row per iteration. Both compute the function.
TEST(DefaultScheduleRuleTest, CpuGemvTakesFourRowsPerIterationARowSumOne) {
  absl::StatusOr<PrimFunc> gemv = MakeWorkload("GEMV", {{"M", 64}, {"K", 256}});
  absl::StatusOr<PrimFunc> row_sum = MakeWorkload("REDUCE_SUM", {{"M", 64}, {"N", 256}});
  ASSERT_TRUE(gemv.ok() && row_sum.ok());
  const PrimFunc scheduled_gemv = ApplyToModule(*gemv, CpuTarget()).second;
  const PrimFunc scheduled_sum = ApplyToModule(*row_sum, CpuTarget()).second;
  EXPECT_EQ(UnrolledLoopsOf(scheduled_gemv, 4), 2) << PrintFunc(scheduled_gemv);
  EXPECT_EQ(UnrolledLoopsOf(scheduled_sum, 4), 0) << PrintFunc(scheduled_sum);
  ExpectMatchesReference(scheduled_gemv, *gemv);
  ExpectMatchesReference(scheduled_sum, *row_sum);
}

// A row too short for 4 iterations of several accumulator vectors keeps one vector of lanes:
// 48 = 3 x 16.
TEST(DefaultScheduleRuleTest, CpuShortContiguousSumKeepsOneVectorOfLanes) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GEMV", {{"M", 64}, {"K", 48}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  EXPECT_EQ(PartialSumsPerRow(scheduled), (std::multiset<int64_t>{16})) << PrintFunc(scheduled);
  ExpectMatchesReference(scheduled, *func);
}

// The extents of the loops of `kind` in `f`.
std::multiset<int64_t> LoopExtents(const PrimFunc& f, ForKind kind) {
  std::multiset<int64_t> extents;
  PostOrderVisitStmts(f->body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    const auto* extent = loop == nullptr ? nullptr : loop->extent.as<IntImmNode>();
    if (extent != nullptr && loop->for_kind == kind) extents.insert(extent->value);
  });
  return extents;
}

// A batch-1 product with a [K, N] weight (y = x W, the vectorized-row path) has one row: its
// 1000 columns are cut into blocks of at most 8 vectors (accumulators that stay in registers),
// at least one per core, run in parallel, the last block clipped.
TEST(DefaultScheduleRuleTest, CpuOneRowProductSplitsItsColumnsIntoRegisterBlocks) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("LINEAR", {{"M", 1}, {"N", 1000}, {"K", 512}});
  ASSERT_TRUE(func.ok()) << func.status();
  struct Case {
    const char* cores;
    int64_t blocks;
    int64_t block_columns;
  };
  // 16 lanes: 8 vectors are 128 columns (8 blocks, the last of 104); with 16 cores a block of
  // 64 columns gives each core one.
  for (const Case& c : {Case{"2", 8, 128}, Case{"4", 8, 128}, Case{"16", 16, 64}}) {
    absl::StatusOr<Target> target =
        default_schedule_testing::Avx512CpuTarget().With("cores", c.cores);
    ASSERT_TRUE(target.ok()) << target.status();
    const PrimFunc scheduled = ApplyToModule(*func, *target).second;
    EXPECT_EQ(LoopExtents(scheduled, ForKind::kParallel), (std::multiset<int64_t>{c.blocks}))
        << c.cores << " cores\n"
        << PrintFunc(scheduled);
    EXPECT_EQ(LoopExtents(scheduled, ForKind::kVectorized),
              (std::multiset<int64_t>{c.block_columns}))
        << c.cores << " cores\n"
        << PrintFunc(scheduled);
    ExpectMatchesReference(scheduled, *func);
  }
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// An NHWC convolution is register-tiled with output pixels as rows: a local accumulator of
// rows x vectors of channels, the row and vector loops unrolled, the lanes vectorized. On an
// AVX-512 core 16 pixels x 64 channels get 8 x 2 vectors, not 4 x 4 (the same 16 accumulators,
// half the weight vectors loaded per multiply-add).
TEST(DefaultScheduleRuleTest, CpuConvolutionIsRegisterTiledOverPixels) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", {{"N", 1},
                                                       {"H", 6},
                                                       {"W", 16},
                                                       {"CI", 16},
                                                       {"CO", 64},
                                                       {"K", 3},
                                                       {"stride", 1},
                                                       {"padding", 1}});
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled =
      ApplyToModule(*func, default_schedule_testing::Avx512CpuTarget()).second;
  const ScheduleShape shape = ShapeOf(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_EQ(LoopExtents(scheduled, ForKind::kUnrolled), (std::multiset<int64_t>{8, 2}))
      << PrintFunc(scheduled);
  EXPECT_TRUE(shape.kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
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
