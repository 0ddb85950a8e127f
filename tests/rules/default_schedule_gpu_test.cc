// The default GPU schedule of every workload, built with NVRTC for the device's architecture,
// run on GPU 0 and checked against the unscheduled function at the workload's default shape
// (worker/check.h: interpreter or naive C reference). Skips with "no CUDA device: ..." without
// a GPU.
#include <memory>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "rules/default/default_rule.h"
#include "worker/check.h"
#include "worker/devices.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

// "" when a device is there, else why not, as "no CUDA device: ...".
std::string NoDeviceReason() {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  if (devices.ok()) return "";
  std::string message(devices.status().message());
  return message.rfind("no CUDA device", 0) == 0 ? message : "no CUDA device: " + message;
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& info : ListWorkloads()) names.push_back(info.name);
  return names;
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

}  // namespace
}  // namespace tessera
