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
