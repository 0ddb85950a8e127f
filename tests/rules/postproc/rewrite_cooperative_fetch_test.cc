// RewriteCooperativeFetch (rules/postproc/rewrite_cooperative_fetch.cc). On schedules built by hand
// with the annotations the schedule rules produce: what it rewrites or rejects (with the reason),
// and that the result computes what the unscheduled function computes and replays from its trace
// JSON.
#include <vector>

#include "gtest/gtest.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "tests/rules/postproc_testing.h"
#include "tests/testing/schedule_testing.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using postproc_testing::Cuda;
using postproc_testing::CudaPostprocs;
using postproc_testing::ExpectNvrtcCompiles;
using postproc_testing::Loop;
using postproc_testing::RunPostprocs;
using postproc_testing::TiledGpuGmm;
using postproc_testing::Workload;
using testing::CheckScheduleCorrect;

TEST(RewriteCooperativeFetchTest, SharedCopiesAreSplitOverTheThreadsAndVectorized) {
  PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 16}, {"N", 32}, {"K", 16}});
  Schedule sch = TiledGpuGmm(func, 4);
  absl::Status s = RunPostprocs(&sch, CudaPostprocs());
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  for (const char* name : {"A_shared", "B_shared"}) {
    BlockRV copy = *sch.GetBlock(name);
    EXPECT_EQ((*sch.Get(copy))->annotations.count(attr::kCooperativeFetch), 0u);
    std::vector<LoopRV> loops = *sch.GetLoops(copy);
    ASSERT_GE(loops.size(), 3u);
    const ForNode* ty = Loop(sch, loops[loops.size() - 3]);
    const ForNode* tx = Loop(sch, loops[loops.size() - 2]);
    const ForNode* vec = Loop(sch, loops.back());
    EXPECT_EQ(ty->thread_tag, "threadIdx.y") << name;
    EXPECT_TRUE(IsConstInt(ty->extent, 4));
    EXPECT_EQ(tx->thread_tag, "threadIdx.x") << name;
    EXPECT_TRUE(IsConstInt(tx->extent, 8));
    EXPECT_EQ(vec->for_kind, ForKind::kVectorized) << name;
    EXPECT_TRUE(IsConstInt(vec->extent, 4));
  }
  EXPECT_TRUE(sch.GetBlock("C_init").ok());
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  ExpectNvrtcCompiles(sch.func(), Cuda());
}

// 3 lanes do not divide the copies' extents: no lane loop.
TEST(RewriteCooperativeFetchTest, LanesThatDoNotDivideFallBackToScalarCopies) {
  PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 16}, {"N", 32}, {"K", 16}});
  Schedule sch = TiledGpuGmm(func, 3);
  ASSERT_TRUE(RunPostprocs(&sch, CudaPostprocs()).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_shared"));
  EXPECT_EQ(Loop(sch, loops.back())->thread_tag, "threadIdx.x");
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

}  // namespace
}  // namespace tessera
