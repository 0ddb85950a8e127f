// Tests of rules/default/gpu_reduction.cc (the "Reduction" default rule): a sum along
// contiguous memory gets one thread block per row with its threads combining the row; the
// schedule passes the GPU checks and computes what the workload computes; chains, transposes
// and element-wise functions are left to the next rule; a row sum shared by the threads of a
// block is read only after a barrier.
#include "codegen/lower_gpu.h"
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
#include "tests/codegen/lower_gpu_testing.h"
#include "tests/rules/default/gpu_rule_testing.h"

namespace tessera {
namespace {

using dlight::NewGpuReductionRule;
using gpu_rule_testing::BoundThreads;
using gpu_rule_testing::ExpectDeclines;
using gpu_rule_testing::ExpectSchedulesCorrectly;

TEST(GpuReductionRuleTest, RowSumGetsABlockPerRowAndAtLeastAWarpOfThreads) {
  DefaultRulePtr rule = NewGpuReductionRule();
  EXPECT_EQ(rule->name(), "Reduction");
  std::optional<Schedule> sch = ExpectSchedulesCorrectly(*rule, "REDUCE_SUM");
  ASSERT_TRUE(sch.has_value());
  EXPECT_GE(BoundThreads(sch->func()).at("threadIdx.x"), 32);
}

// RMS_NORM: thread 0 of a block stores its row's sum of squares in shared memory and every
// thread then reads it, so the kernel needs one barrier between (without it, on an H100,
// 391392 of 393216 outputs were wrong; the interpreter, which has no threads, cannot tell).
TEST(GpuReductionRuleTest, TheSharedRowSumIsReadAfterABarrier) {
  std::optional<Schedule> sch = ExpectSchedulesCorrectly(*NewGpuReductionRule(), "RMS_NORM");
  ASSERT_TRUE(sch.has_value());
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(sch->func(), lower_gpu_testing::Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(
      lower_gpu_testing::Count(lower_gpu_testing::ExternCalls(lowered->body()), "__syncthreads"),
      1);
}

TEST(GpuReductionRuleTest, LeavesChainsTransposesAndElementwiseToTheNextRule) {
  DefaultRulePtr rule = NewGpuReductionRule();
  for (const char* workload : {"SFM", "TRANSPOSE", "ELEMENTWISE"}) ExpectDeclines(*rule, workload);
}

}  // namespace
}  // namespace tessera
