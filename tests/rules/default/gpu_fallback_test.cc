// Tests of rules/default/gpu_fallback.cc (the "Fallback" default rule): it schedules any
// function, element-wise, convolutions and the fused conv + bias + batch norm + ReLU (whose
// epilogue is inlined into a register accumulator's write-back); the schedules pass the GPU
// checks and compute what the workloads compute; it never applies on cpu.
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
#include "tests/rules/default/gpu_rule_testing.h"

namespace tessera {
namespace {

using dlight::NewGpuFallbackRule;
using gpu_rule_testing::ExpectSchedulesCorrectly;

TEST(GpuFallbackRuleTest, SchedulesAnyFunctionCorrectly) {
  DefaultRulePtr rule = NewGpuFallbackRule();
  EXPECT_EQ(rule->name(), "Fallback");
  for (const char* workload : {"ELEMENTWISE", "C2D", "CBR", "GMM", "REDUCE_SUM"}) {
    SCOPED_TRACE(workload);
    ExpectSchedulesCorrectly(*rule, workload);
  }
}

TEST(GpuFallbackRuleTest, DoesNotApplyOnCpu) {
  absl::StatusOr<std::optional<Schedule>> sch = NewGpuFallbackRule()->Apply(
      testing::SmallWorkload("ELEMENTWISE"), default_schedule_testing::CpuTarget());
  ASSERT_TRUE(sch.ok()) << sch.status();
  EXPECT_FALSE(sch->has_value());
}

}  // namespace
}  // namespace tessera
