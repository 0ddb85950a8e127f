// The default (DLight-style) schedules of rules/default: every workload of the library gets one
// on both targets; on cpu it builds with the C backend, runs and matches the unscheduled
// function; on cuda (sm_80, sm_90) it passes the GPU checks, compiles with NVRTC (skipped in a
// build without it) and computes what the unscheduled function computes in the interpreter, its
// trace replaying to it. No GPU needed (default_schedule_gpu_test.cc runs them on a device).
// The tests of single rules are in tests/rules/default/.
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

using default_schedule_testing::Applied;
using default_schedule_testing::ApplyFirst;
using default_schedule_testing::ApplyToModule;
using default_schedule_testing::CpuTarget;
using default_schedule_testing::CudaTarget;
using default_schedule_testing::WorkloadNames;

// The default GPU schedule of `workload` in `dtype` passes the GPU checks and compiles with
// NVRTC for sm_80 and sm_90.
void CheckVerifiesAndCompiles(const std::string& workload, const std::string& dtype) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(workload, {}, dtype);
  ASSERT_TRUE(func.ok()) << func.status();
  for (const char* arch : {"sm_80", "sm_90"}) {
    const Target target = CudaTarget(arch);
    auto [rule, scheduled] = ApplyToModule(*func, target);
    ASSERT_FALSE(rule.empty()) << "no GPU rule applies to " << workload;
    absl::Status verified = VerifyGpuCode(scheduled, target);
    ASSERT_TRUE(verified.ok()) << rule << ": " << verified << "\n" << PrintFunc(scheduled);
    absl::StatusOr<CudaModule> module = GenerateCuda(scheduled, target);
    ASSERT_TRUE(module.ok()) << rule << ": " << module.status();
    absl::StatusOr<std::string> cubin = CompileCudaSource(module->source, arch);
    if (cubin.status().code() == absl::StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << "no NVRTC: " << cubin.status();
    }
    ASSERT_TRUE(cubin.ok()) << arch << " " << rule << ": " << cubin.status() << "\n"
                            << module->source;
  }
}

class DefaultScheduleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DefaultScheduleTest, CpuScheduleBuildsRunsAndMatchesTheReference) {
  const PrimFunc func = testing::SmallWorkload(GetParam());
  const Target target = CpuTarget();
  auto [rule, scheduled] = ApplyToModule(func, target);
  ASSERT_TRUE(rule == "CpuRowReduction" || rule == "CpuTranspose" || rule == "CpuDefault") << rule;
  auto it = scheduled.attrs().find(attr::kScheduled);
  ASSERT_NE(it, scheduled.attrs().end());
  EXPECT_EQ(std::get<int64_t>(it->second), 1);

  std::unique_ptr<Builder> builder = NewCBuilder();
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(builder.get(), scheduled, func, target, /*seed=*/0, /*timeout_sec=*/60);
  ASSERT_TRUE(check.ok()) << check.status() << "\n" << PrintFunc(scheduled);
  EXPECT_TRUE(check->passed) << "max abs error " << check->max_abs_error << "\n"
                             << PrintFunc(scheduled);

  Applied applied = ApplyFirst(func, target);
  ASSERT_TRUE(applied.sch.has_value());
  absl::Status replay = testing::CheckReplay(*applied.sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

// In every dtype the workload supports (float16 GEMMs take the SIMT path too).
TEST_P(DefaultScheduleTest, CudaScheduleVerifiesAndCompilesAtTheDefaultShape) {
  absl::StatusOr<WorkloadInfo> info = FindWorkload(GetParam());
  ASSERT_TRUE(info.ok()) << info.status();
  for (const std::string& dtype : info->dtypes) {
    SCOPED_TRACE(dtype);
    CheckVerifiesAndCompiles(GetParam(), dtype);
  }
}

TEST_P(DefaultScheduleTest, CudaScheduleComputesWhatTheWorkloadComputes) {
  const PrimFunc func = testing::SmallWorkload(GetParam());
  const Target target = CudaTarget("sm_80");
  Applied applied = ApplyFirst(func, target);
  ASSERT_TRUE(applied.sch.has_value()) << "no GPU rule applies to " << GetParam();
  absl::Status verified = VerifyGpuCode(applied.sch->func(), target);
  EXPECT_TRUE(verified.ok()) << applied.rule << ": " << verified;
  absl::Status correct = testing::CheckScheduleCorrect(*applied.sch, func);
  EXPECT_TRUE(correct.ok()) << applied.rule << ": " << correct;
}

INSTANTIATE_TEST_SUITE_P(Workloads, DefaultScheduleTest, ::testing::ValuesIn(WorkloadNames()),
                         [](const auto& info) { return info.param; });

TEST(DefaultScheduleRuleTest, RepresentativeWorkloadsGetTheExpectedGpuRule) {
  const std::map<std::string, std::string> expected = {
      {"GMM", "Matmul"},
      {"DENSE_BIAS_RELU", "Matmul"},
      {"LINEAR", "Matmul"},
      {"TBG", "Matmul"},
      {"GEMV", "GEMV"},
      {"REDUCE_SUM", "Reduction"},
      {"SFM", "GeneralReduction"},
      {"LAYER_NORM", "GeneralReduction"},
      {"TRANSPOSE", "Transpose"},
      {"ELEMENTWISE", "Fallback"},
  };
  for (const auto& [workload, rule] : expected) {
    absl::StatusOr<PrimFunc> func = MakeWorkload(workload);
    ASSERT_TRUE(func.ok()) << func.status();
    EXPECT_EQ(ApplyToModule(*func, CudaTarget("sm_90")).first, rule) << workload;
    EXPECT_EQ(ApplyToModule(testing::SmallWorkload(workload), CudaTarget("sm_80")).first, rule)
        << workload << " at a small shape";
  }
  // A convolution is a Matmul over [pixels, taps] im2col tiles (docs/default-schedules.md), the
  // default C2D (ResNet's 7 x 7 stride-2 stem) and the small one alike.
  absl::StatusOr<PrimFunc> stem = MakeWorkload("C2D");
  ASSERT_TRUE(stem.ok()) << stem.status();
  EXPECT_EQ(ApplyToModule(*stem, CudaTarget("sm_90")).first, "Matmul");
  EXPECT_EQ(ApplyToModule(testing::SmallWorkload("C2D"), CudaTarget("sm_80")).first, "Matmul");
}

// GMM on cpu: register tiles (a local accumulator), parallel outer loop, vectorized columns.

TEST(DefaultScheduleRuleTest, RulesApplyOnlyToTheirTargetKind) {
  const PrimFunc func = testing::SmallWorkload("GMM");
  for (const DefaultRulePtr& rule : DefaultGpuRules()) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(func, CpuTarget());
    ASSERT_TRUE(sch.ok());
    EXPECT_FALSE(sch->has_value()) << rule->name() << " applied on cpu";
  }
  for (const DefaultRulePtr& rule : DefaultCpuRules()) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(func, CudaTarget("sm_80"));
    ASSERT_TRUE(sch.ok());
    EXPECT_FALSE(sch->has_value()) << rule->name() << " applied on cuda";
  }
  EXPECT_EQ(DefaultRulesFor(CpuTarget()).size(), DefaultCpuRules().size());
  EXPECT_EQ(DefaultRulesFor(CudaTarget("sm_90")).front()->name(), "Matmul");
  EXPECT_EQ(DefaultRulesFor(CudaTarget("sm_90")).back()->name(), "Fallback");
}

TEST(DefaultScheduleRuleTest, SpecializedRulesDeclineWhatTheyDoNotMatch) {
  const Target target = CudaTarget("sm_80");
  for (const DefaultRulePtr& rule : DefaultGpuRules()) {
    if (rule->name() == "Fallback") continue;
    absl::StatusOr<std::optional<Schedule>> sch =
        rule->Apply(testing::SmallWorkload("ELEMENTWISE"), target);
    ASSERT_TRUE(sch.ok());
    EXPECT_FALSE(sch->has_value()) << rule->name() << " claimed ELEMENTWISE";
  }
}

}  // namespace
}  // namespace tessera
