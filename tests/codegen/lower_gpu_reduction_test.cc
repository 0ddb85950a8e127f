// Tests of codegen/lower_gpu_reduction.cc (step 1 of LowerForGpu) on the lowered IR: a reduction
// whose reduction loop is bound to threadIdx.x becomes a per-thread partial sum, one block-wide
// reduction call and a store by one thread; the lowered function computes what the workload
// does; thread counts the block reduction cannot combine are refused.
#include <string>
#include <vector>

#include "codegen/lower_gpu.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "tests/codegen/gpu_schedules.h"
#include "tests/codegen/lower_gpu_testing.h"

namespace tessera {
namespace {

using lower_gpu_testing::Count;
using lower_gpu_testing::ExternCalls;
using lower_gpu_testing::Sm80;

TEST(LowerGpuReductionTest, CrossThreadSumBecomesOneBlockReduceCall) {
  absl::StatusOr<PrimFunc> lowered =
      LowerForGpu(gpu_testing::ScheduleReduceSum(16, 256, 64).func(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::vector<std::string> calls = ExternCalls(lowered->body());
  EXPECT_EQ(Count(calls, "tessera_block_reduce_sum"), 1);
  // A local register for the partial sum and a shared scratch for the warps' results.
  std::vector<std::string> scopes;
  PostOrderVisitStmts(lowered->body(), [&](const Stmt& s) {
    if (const auto* alloc = s.as<AllocateNode>()) scopes.push_back(alloc->buffer.scope());
  });
  EXPECT_EQ(Count(scopes, "local"), 1);
  EXPECT_EQ(Count(scopes, "shared"), 1);
}

TEST(LowerGpuReductionTest, OnlyOneThreadStoresTheRowsResult) {
  absl::StatusOr<PrimFunc> lowered =
      LowerForGpu(gpu_testing::ScheduleReduceSum(16, 256, 64).func(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  int guarded_stores = 0;
  PostOrderVisitStmts(lowered->body(), [&](const Stmt& s) {
    const auto* guard = s.as<IfThenElseNode>();
    if (guard == nullptr) return;
    PostOrderVisitStmts(guard->then_case, [&](const Stmt& inner) {
      const auto* store = inner.as<BufferStoreNode>();
      guarded_stores += store != nullptr && store->buffer.name() == "A_red" ? 1 : 0;
    });
  });
  EXPECT_EQ(guarded_stores, 1);
}

TEST(LowerGpuReductionTest, ThreadCountTheBlockReductionCannotCombineIsRefused) {
  absl::StatusOr<PrimFunc> lowered =
      LowerForGpu(gpu_testing::ScheduleReduceSum(8, 48, 48).func(), Sm80());
  ASSERT_FALSE(lowered.ok());
  EXPECT_NE(std::string(lowered.status().message())
                .find("threadIdx.x extent 48 is neither a power of two up to 32 nor a multiple of "
                      "32"),
            std::string::npos)
      << lowered.status();
}

}  // namespace
}  // namespace tessera
