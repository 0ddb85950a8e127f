// Tests of rules/default/gpu_reduction.cc (the "Reduction" default rule): a sum along
// contiguous memory gets one thread block per row with its threads combining the row; the
// schedule passes the GPU checks and computes what the workload computes; chains, transposes
// and element-wise functions are left to the next rule.
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
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

TEST(GpuReductionRuleTest, LeavesChainsTransposesAndElementwiseToTheNextRule) {
  DefaultRulePtr rule = NewGpuReductionRule();
  for (const char* workload : {"SFM", "TRANSPOSE", "ELEMENTWISE"}) ExpectDeclines(*rule, workload);
}

}  // namespace
}  // namespace tessera
