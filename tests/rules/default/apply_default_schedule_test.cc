// ApplyDefaultSchedule (rules/default/apply_default_schedule.cc): functions already scheduled
// and functions no rule takes are left as they are, and the report says which rule took which
// function.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/default/default_rule.h"
#include "schedule/tensor_intrin.h"
#include "schedule/trace.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using default_schedule_testing::CudaTarget;

TEST(DefaultScheduleApplyTest, AlreadyScheduledFunctionIsLeftAlone) {
  const PrimFunc func =
      testing::SmallWorkload("GMM").WithAttr(attr::kScheduled, int64_t{1}).WithName("gmm");
  const PrimFunc other = testing::SmallWorkload("ELEMENTWISE").WithName("add");
  IRModule mod;
  mod.Update(func);
  mod.Update(other);
  std::vector<DefaultScheduleEntry> report;
  absl::StatusOr<IRModule> out =
      ApplyDefaultSchedule(mod, CudaTarget("sm_90"), DefaultGpuRules(), &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->Lookup("gmm")->same_as(func));
  EXPECT_FALSE(out->Lookup("add")->same_as(other));
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[0].function, "add");
  EXPECT_EQ(report[0].rule, "Fallback");
  EXPECT_FALSE(report[0].already_scheduled);
  EXPECT_EQ(report[1].function, "gmm");
  EXPECT_EQ(report[1].rule, "");
  EXPECT_TRUE(report[1].already_scheduled);
}

TEST(DefaultScheduleApplyTest, NoApplicableRuleLeavesTheFunctionUnchanged) {
  const PrimFunc func = testing::SmallWorkload("ELEMENTWISE").WithName("add");
  std::vector<DefaultRulePtr> rules = {DefaultGpuRules().front()};  // Matmul only
  std::vector<DefaultScheduleEntry> report;
  absl::StatusOr<IRModule> out =
      ApplyDefaultSchedule(IRModule::FromFunction(func), CudaTarget("sm_90"), rules, &report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->Lookup("add")->same_as(func));
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].rule, "");
  EXPECT_FALSE(report[0].already_scheduled);
}

}  // namespace
}  // namespace tessera
