// Tests of rules/default/gpu_gemv.cc (the "GEMV" default rule): a matrix-vector product gets one
// thread block per output element whose threads share the row's reduction; the schedules pass the
// GPU checks and compute what the workloads compute; what is not an inner-sum GEMV is left to the
// next rule.
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
#include "tests/rules/default/gpu_rule_testing.h"

namespace tessera {
namespace {

using dlight::NewGpuGemvRule;
using gpu_rule_testing::BoundThreads;
using gpu_rule_testing::ExpectDeclines;
using gpu_rule_testing::ExpectSchedulesCorrectly;

TEST(GpuGemvRuleTest, GemvGetsABlockPerRowAndThreadsOverTheReduction) {
  DefaultRulePtr rule = NewGpuGemvRule();
  EXPECT_EQ(rule->name(), "GEMV");
  std::optional<Schedule> sch = ExpectSchedulesCorrectly(*rule, "GEMV");
  ASSERT_TRUE(sch.has_value());
  EXPECT_GT(BoundThreads(sch->func()).at("threadIdx.x"), 1);
}

// A batch-1 dense layer (ResNet's classifier: y[0, n] = relu(x[0, k] W[n, k] + b[n])) is a GEMV:
// its unit batch iterator, which the weight does not use, does not make W a vector, nor the
// accumulator y the read that decides the reduction is inner.
TEST(GpuGemvRuleTest, ABatchOneDenseLayerIsAGemv) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("DENSE_BIAS_RELU", {{"M", 1}, {"N", 200}, {"K", 160}});
  ASSERT_TRUE(func.ok()) << func.status();
  std::optional<Schedule> sch = ExpectSchedulesCorrectly(*NewGpuGemvRule(), *func, "DENSE M=1");
  ASSERT_TRUE(sch.has_value());
  EXPECT_GT(BoundThreads(sch->func()).at("threadIdx.x"), 1);
}

TEST(GpuGemvRuleTest, LeavesWhatIsNotAGemvToTheNextRule) {
  DefaultRulePtr rule = NewGpuGemvRule();
  for (const char* workload : {"ELEMENTWISE", "TRANSPOSE", "SFM"}) ExpectDeclines(*rule, workload);
}

}  // namespace
}  // namespace tessera
