// RewriteUnboundBlock (rules/postproc/rewrite_unbound_block.cc). On schedules built by hand with
// the annotations the schedule rules produce: what it rewrites or rejects (with the reason), and
// that the result computes what the unscheduled function computes and replays from its trace JSON.
#include <vector>

#include "gtest/gtest.h"
#include "ir/printer.h"
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
using postproc_testing::Workload;
using testing::CheckScheduleCorrect;

TEST(RewriteUnboundBlockTest, UnboundElementwiseIsBoundAndCompiles) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  absl::Status s = RunPostprocs(&sch, CudaPostprocs());
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(loops.size(), 2u) << PrintFunc(sch.func());
  EXPECT_EQ(Loop(sch, loops[0])->thread_tag, "blockIdx.x");
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[0])->extent, 4));
  EXPECT_EQ(Loop(sch, loops[1])->thread_tag, "threadIdx.x");
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[1])->extent, 1024));
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  ExpectNvrtcCompiles(sch.func(), Cuda());
}

}  // namespace
}  // namespace tessera
