// Tests of rules/default/gpu_general_reduction.cc (the "GeneralReduction" default rule):
// softmax, layer norm and RMS norm get one thread block per row whose threads share every
// stage; the schedules pass the GPU checks and compute what the workloads compute; transposes
// and element-wise functions are left to the next rule.
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
#include "tests/rules/default/gpu_rule_testing.h"

namespace tessera {
namespace {

using dlight::NewGpuGeneralReductionRule;
using gpu_rule_testing::ExpectDeclines;
using gpu_rule_testing::ExpectSchedulesCorrectly;

TEST(GpuGeneralReductionRuleTest, RowWiseChainsAreScheduledAndCorrect) {
  DefaultRulePtr rule = NewGpuGeneralReductionRule();
  EXPECT_EQ(rule->name(), "GeneralReduction");
  for (const char* workload : {"SFM", "LAYER_NORM", "RMS_NORM"}) {
    SCOPED_TRACE(workload);
    ExpectSchedulesCorrectly(*rule, workload);
  }
}

TEST(GpuGeneralReductionRuleTest, LeavesTransposesAndElementwiseToTheNextRule) {
  DefaultRulePtr rule = NewGpuGeneralReductionRule();
  for (const char* workload : {"TRANSPOSE", "ELEMENTWISE"}) ExpectDeclines(*rule, workload);
}

}  // namespace
}  // namespace tessera
