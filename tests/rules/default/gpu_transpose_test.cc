// Tests of rules/default/gpu_transpose.cc (the "Transpose" default rule): a 2-D transpose moves
// tiles through shared memory with 2-D thread blocks; the schedule passes the GPU checks and
// computes what the workload computes; identity copies and reductions are left to the next rule.
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
#include "tests/rules/default/gpu_rule_testing.h"

namespace tessera {
namespace {

using dlight::NewGpuTransposeRule;
using gpu_rule_testing::BoundThreads;
using gpu_rule_testing::ExpectDeclines;
using gpu_rule_testing::ExpectSchedulesCorrectly;

TEST(GpuTransposeRuleTest, TransposeUsesTwoDimensionalThreadBlocks) {
  DefaultRulePtr rule = NewGpuTransposeRule();
  EXPECT_EQ(rule->name(), "Transpose");
  std::optional<Schedule> sch = ExpectSchedulesCorrectly(*rule, "TRANSPOSE");
  ASSERT_TRUE(sch.has_value());
  EXPECT_EQ(BoundThreads(sch->func()).count("threadIdx.y"), 1u);
}

TEST(GpuTransposeRuleTest, LeavesIdentityCopiesAndReductionsToTheNextRule) {
  DefaultRulePtr rule = NewGpuTransposeRule();
  for (const char* workload : {"ELEMENTWISE", "REDUCE_SUM", "GMM"}) ExpectDeclines(*rule, workload);
}

}  // namespace
}  // namespace tessera
