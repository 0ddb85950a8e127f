// The default (DLight-style) schedules of rules/default: every workload of the library gets one
// on both targets; on cpu it builds with the C backend, runs and matches the unscheduled
// function; on cuda (sm_80, sm_90) it passes the GPU checks, compiles with NVRTC (skipped in a
// build without it) and computes what the unscheduled function computes in the interpreter, its
// trace replaying to it. No GPU needed (default_schedule_gpu_test.cc runs them on a device).
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
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

Target CudaTarget(const std::string& arch) {
  absl::StatusOr<Target> target = Target::Parse(
      "cuda -arch=" + arch + " -max_threads_per_block=1024 -max_shared_memory_per_block=49152");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

Target CpuTarget() {
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

// The first rule of the target's list that applies, with its schedule.
struct Applied {
  std::string rule;
  std::optional<Schedule> sch;
};

Applied ApplyFirst(const PrimFunc& func, const Target& target) {
  for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(func, target);
    TESSERA_CHECK(sch.ok()) << sch.status();
    if (sch->has_value()) return {rule->name(), std::move(*sch)};
  }
  return {"", std::nullopt};
}

// The rule ApplyDefaultSchedule reports for `func`, and the function it produced.
std::pair<std::string, PrimFunc> ApplyToModule(const PrimFunc& func, const Target& target) {
  std::vector<DefaultScheduleEntry> report;
  absl::StatusOr<IRModule> mod = ApplyDefaultSchedule(IRModule::FromFunction(func), target,
                                                      DefaultRulesFor(target), &report);
  TESSERA_CHECK(mod.ok()) << mod.status();
  TESSERA_CHECK(report.size() == 1);
  return {report[0].rule, *mod->Lookup(func.name())};
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& info : ListWorkloads()) names.push_back(info.name);
  return names;
}

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
  ASSERT_EQ(rule, "CpuDefault");
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
      {"TBG", "Matmul"},
      {"GEMV", "GEMV"},
      {"REDUCE_SUM", "Reduction"},
      {"SFM", "GeneralReduction"},
      {"LAYER_NORM", "GeneralReduction"},
      {"TRANSPOSE", "Transpose"},
      {"ELEMENTWISE", "Fallback"},
      {"C2D", "Fallback"},
  };
  for (const auto& [workload, rule] : expected) {
    absl::StatusOr<PrimFunc> func = MakeWorkload(workload);
    ASSERT_TRUE(func.ok()) << func.status();
    EXPECT_EQ(ApplyToModule(*func, CudaTarget("sm_90")).first, rule) << workload;
    EXPECT_EQ(ApplyToModule(testing::SmallWorkload(workload), CudaTarget("sm_80")).first, rule)
        << workload << " at a small shape";
  }
}

// GMM on cpu: register tiles (a local accumulator), parallel outer loop, vectorized columns.
TEST(DefaultScheduleRuleTest, CpuMatmulIsRegisterTiled) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("GMM");
  ASSERT_TRUE(func.ok()) << func.status();
  const PrimFunc scheduled = ApplyToModule(*func, CpuTarget()).second;
  std::set<ForKind> kinds;
  std::set<std::string> scopes;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) kinds.insert(loop->for_kind);
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) scopes.insert(b.scope());
    }
  });
  EXPECT_TRUE(kinds.count(ForKind::kParallel)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kVectorized)) << PrintFunc(scheduled);
  EXPECT_TRUE(kinds.count(ForKind::kUnrolled)) << PrintFunc(scheduled);
  EXPECT_TRUE(scopes.count("local")) << PrintFunc(scheduled);
}

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

// ---- Matmul: the tensor-core (WMMA) path ------------------------------------------------

PrimFunc HalfGmm(int64_t m, int64_t n, int64_t k) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, "float16");
}

// Intrinsic names of the Tensorize instructions of `sch`'s trace.
std::multiset<std::string> TensorizedIntrins(const Schedule& sch) {
  std::multiset<std::string> out;
  for (const Instruction& inst : sch.trace().insts()) {
    if (std::string(inst.kind->name) == "Tensorize") out.insert(inst.attrs[0].as_string());
  }
  return out;
}

TEST(DefaultScheduleTensorCoreTest, Float16GmmOnSm80IsTensorizedVerifiedAndCompiles) {
  const PrimFunc func = HalfGmm(256, 256, 256);
  const Target target = CudaTarget("sm_80");
  Applied applied = ApplyFirst(func, target);
  ASSERT_EQ(applied.rule, "Matmul");
  ASSERT_TRUE(applied.sch.has_value());
  // fill, mma, store, load A, load B (each tensorized once: the loops around repeat them).
  EXPECT_EQ(TensorizedIntrins(*applied.sch),
            (std::multiset<std::string>{kWmmaFillF16, kWmmaSyncF16, kWmmaStoreF16, kWmmaLoadA,
                                        kWmmaLoadB}))
      << PrintFunc(applied.sch->func());
  absl::Status verified = VerifyGpuCode(applied.sch->func(), target);
  ASSERT_TRUE(verified.ok()) << verified << "\n" << PrintFunc(applied.sch->func());
  absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), target);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_NE(module->source.find("wmma::mma_sync"), std::string::npos);
  for (const CudaKernel& kernel : module->kernels) EXPECT_EQ(kernel.block[0], 32) << kernel.name;
  absl::StatusOr<std::string> cubin = CompileCudaSource(module->source, "sm_80");
  if (cubin.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "no NVRTC: " << cubin.status();
  }
  ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << module->source;
}

TEST(DefaultScheduleTensorCoreTest, TensorizedScheduleComputesWhatTheGmmComputes) {
  for (const auto& [m, n, k] :
       {std::make_tuple(32, 32, 32), std::make_tuple(64, 64, 64), std::make_tuple(16, 48, 32)}) {
    SCOPED_TRACE(absl::StrCat(m, "x", n, "x", k));
    const PrimFunc func = HalfGmm(m, n, k);
    Applied applied = ApplyFirst(func, CudaTarget("sm_80"));
    ASSERT_EQ(applied.rule, "Matmul");
    EXPECT_EQ(TensorizedIntrins(*applied.sch).size(), 5u);
    absl::Status correct = testing::CheckTensorizedScheduleCorrect(*applied.sch, func);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

TEST(DefaultScheduleTensorCoreTest, OtherArchitecturesDtypesAndShapesTakeTheSimtPath) {
  struct Case {
    PrimFunc func;
    std::string arch;
  };
  for (const Case& c : {Case{HalfGmm(64, 64, 64), "sm_61"}, Case{HalfGmm(24, 32, 32), "sm_80"},
                        Case{testing::SmallWorkload("GMM"), "sm_80"}}) {
    Applied applied = ApplyFirst(c.func, CudaTarget(c.arch));
    ASSERT_EQ(applied.rule, "Matmul") << c.arch;
    EXPECT_TRUE(TensorizedIntrins(*applied.sch).empty()) << c.arch;
    absl::Status correct = testing::CheckScheduleCorrect(*applied.sch, c.func);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

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
