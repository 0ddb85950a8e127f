// Tests of codegen/lower_gpu_sync.cc (step 6 of LowerForGpu) on the lowered IR: a tiled GMM
// that stages A and B in shared memory gets exactly the two barriers it needs per k-tile (after
// the copies, and before the next tile overwrites what this one read); a kernel without shared
// memory gets none.
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

TEST(LowerGpuSyncTest, SharedTilesGetTwoBarriersInTheirLoop) {
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(gpu_testing::ScheduleGmm({}).func(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Count(ExternCalls(lowered->body()), "__syncthreads"), 2);
  // Both inside the serial k-tile loop, so they run once per tile.
  int in_serial_loop = 0;
  PostOrderVisitStmts(lowered->body(), [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kSerial || loop->loop_var->name != "k_0") {
      return;
    }
    in_serial_loop += Count(ExternCalls(loop->body), "__syncthreads");
  });
  EXPECT_EQ(in_serial_loop, 2);
}

TEST(LowerGpuSyncTest, KernelWithoutSharedMemoryHasNoBarrier) {
  absl::StatusOr<PrimFunc> lowered =
      LowerForGpu(gpu_testing::ScheduleElementwise(64, 64, 64, 1).func(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(Count(ExternCalls(lowered->body()), "__syncthreads"), 0);
}

}  // namespace
}  // namespace tessera
