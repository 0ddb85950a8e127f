// The default GPU schedule of every workload, built with NVRTC for the device's architecture,
// run on GPU 0 and checked against the unscheduled function at the workload's default shape
// (worker/check.h: interpreter or naive C reference); and the tensor-core (WMMA) schedules of
// float16 GEMMs, from the default Matmul rule and from the MultiLevelTilingTensorCore design
// space. Skips with "no CUDA device: ..." without a GPU.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "rules/default/default_rule.h"
#include "schedule/trace.h"
#include "tests/rules/default_schedule_testing.h"
#include "tuner/space_generator.h"
#include "worker/check.h"
#include "worker/devices.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using default_schedule_testing::HalfGmm;
using default_schedule_testing::WorkloadNames;

// "" when a device is there, else why not, as "no CUDA device: ...".
std::string NoDeviceReason() {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  if (devices.ok()) return "";
  std::string message(devices.status().message());
  return message.rfind("no CUDA device", 0) == 0 ? message : "no CUDA device: " + message;
}

class DefaultScheduleGpuTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DefaultScheduleGpuTest, RunsOnTheDeviceAndMatchesTheReference) {
  const std::string reason = NoDeviceReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
  ASSERT_TRUE(target.ok()) << target.status();
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam());
  ASSERT_TRUE(func.ok()) << func.status();
  std::vector<DefaultScheduleEntry> report;
  absl::StatusOr<IRModule> mod = ApplyDefaultSchedule(IRModule::FromFunction(*func), *target,
                                                      DefaultGpuRules(), &report);
  ASSERT_TRUE(mod.ok()) << mod.status();
  ASSERT_FALSE(report[0].rule.empty()) << "no GPU rule applies to " << GetParam();
  const PrimFunc scheduled = *mod->Lookup(func->name());

  std::unique_ptr<Builder> builder = NewNvrtcBuilder();
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(builder.get(), scheduled, *func, *target, /*seed=*/0, /*timeout_sec=*/120);
  ASSERT_TRUE(check.ok()) << report[0].rule << ": " << check.status();
  EXPECT_TRUE(check->passed) << report[0].rule << ": " << check->mismatches
                             << " mismatches, max abs error " << check->max_abs_error << " ("
                             << check->reference << ")\n"
                             << PrintFunc(scheduled);
}

INSTANTIATE_TEST_SUITE_P(Workloads, DefaultScheduleGpuTest, ::testing::ValuesIn(WorkloadNames()),
                         [](const auto& info) { return info.param; });

// ---- Tensor cores (WMMA): float16 GEMMs on the device ------------------------------------

bool HasTensorize(const Schedule& sch) {
  for (const Instruction& inst : sch.trace().insts()) {
    if (std::string(inst.kind->name) == "Tensorize") return true;
  }
  return false;
}

void ExpectRunsAndMatches(const PrimFunc& scheduled, const PrimFunc& func, const Target& target) {
  std::unique_ptr<Builder> builder = NewNvrtcBuilder();
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(builder.get(), scheduled, func, target, /*seed=*/0, /*timeout_sec=*/120);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << check->mismatches << " mismatches, max abs error "
                             << check->max_abs_error << " (" << check->reference << ")\n"
                             << PrintFunc(scheduled);
}

// The default Matmul rule's WMMA schedule (sm_70 and later; SIMT below).
TEST(TensorCoreGpuTest, DefaultMatmulScheduleRunsAndMatches) {
  const std::string reason = NoDeviceReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
  ASSERT_TRUE(target.ok()) << target.status();
  for (const PrimFunc& func : {HalfGmm(64, 64, 64), HalfGmm(128, 256, 64)}) {
    std::vector<DefaultScheduleEntry> report;
    absl::StatusOr<IRModule> mod =
        ApplyDefaultSchedule(IRModule::FromFunction(func), *target, DefaultGpuRules(), &report);
    ASSERT_TRUE(mod.ok()) << mod.status();
    ASSERT_EQ(report[0].rule, "Matmul");
    ExpectRunsAndMatches(*mod->Lookup(func.name()), func, *target);
  }
}

// GPU 0's target when it is an sm_90a device (wgmma); nullopt with `skip` saying why otherwise.
std::optional<Target> HopperDevice(std::string* skip) {
  *skip = NoDeviceReason();
  if (!skip->empty()) return std::nullopt;
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
  if (!target.ok()) {
    *skip = target.status().ToString();
    return std::nullopt;
  }
  if (!target->arch_specific() || target->compute_capability() != 90) {
    *skip = "wgmma needs an sm_90a device, this is " + target->arch();
    return std::nullopt;
  }
  return *target;
}

// The default Matmul rule's Hopper schedule on sm_90a (wgmma from TMA tiles through mbarrier
// stages): float16 and bfloat16 summed in float32 at each of its tiles, against the reference.
// Only a run on an H100 proves the descriptors, the swizzle and the accumulator layout.
TEST(TensorCoreGpuTest, HopperDefaultScheduleRunsAndMatches) {
  std::string skip;
  const std::optional<Target> target = HopperDevice(&skip);
  if (!target.has_value()) GTEST_SKIP() << skip;
  for (const char* dtype : {"float16", "bfloat16"}) {
    for (const auto& [m, n, k] : {std::make_tuple(64, 64, 64), std::make_tuple(128, 256, 128),
                                  std::make_tuple(256, 384, 512)}) {
      SCOPED_TRACE(absl::StrCat(dtype, " ", m, "x", n, "x", k));
      const PrimFunc func =
          *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, dtype, "float32");
      std::vector<DefaultScheduleEntry> report;
      absl::StatusOr<IRModule> mod =
          ApplyDefaultSchedule(IRModule::FromFunction(func), *target, DefaultGpuRules(), &report);
      ASSERT_TRUE(mod.ok()) << mod.status();
      ASSERT_EQ(report[0].rule, "Matmul");
      ExpectRunsAndMatches(*mod->Lookup(func.name()), func, *target);
    }
  }
}

// Candidates of the MultiLevelTilingTensorCore design space after the default postprocessors.
TEST(TensorCoreGpuTest, TensorCoreSpaceCandidatesRunAndMatch) {
  const std::string reason = NoDeviceReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
  ASSERT_TRUE(target.ok()) << target.status();
  if (target->compute_capability() < 70) GTEST_SKIP() << "no tensor cores before sm_70";
  const PrimFunc func = HalfGmm(128, 128, 64);
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(*target);
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, *config, 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  int ran = 0;
  for (const Schedule& space : *spaces) {
    for (int64_t seed = 1; seed <= 8 && ran < 4; ++seed) {
      absl::StatusOr<Schedule> c =
          MakeCandidate(func, space.trace(), config->postprocs, seed, /*erase_decisions=*/true);
      if (!c.ok() || !HasTensorize(*c)) continue;  // over the limits, or the SIMT space
      ExpectRunsAndMatches(c->func(), func, *target);
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no tensorized candidate";
}

// Candidates of the MultiLevelTilingWgmma design space (sm_90a): every C tile's branch, with its
// k step and pipeline depth drawn anew, against the reference.
TEST(TensorCoreGpuTest, WgmmaSpaceCandidatesRunAndMatch) {
  std::string skip;
  const std::optional<Target> target = HopperDevice(&skip);
  if (!target.has_value()) GTEST_SKIP() << skip;
  const PrimFunc func =
      *MakeWorkload("GMM", {{"B", 1}, {"M", 128}, {"N", 256}, {"K", 256}}, "float16", "float32");
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(*target);
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, *config, 1);
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  int ran = 0;
  for (const Schedule& space : *spaces) {
    if (PrintFunc(space.func()).find("wgmma.accumulator") == std::string::npos) continue;
    for (int64_t seed = 1; seed <= 4; ++seed) {
      absl::StatusOr<Schedule> c =
          MakeCandidate(func, space.trace(), config->postprocs, seed, /*erase_decisions=*/true);
      if (!c.ok()) continue;  // over the shared-memory limit
      ExpectRunsAndMatches(c->func(), func, *target);
      ++ran;
      break;
    }
  }
  EXPECT_EQ(ran, 6) << "one candidate of each C tile's branch";
}

}  // namespace
}  // namespace tessera
