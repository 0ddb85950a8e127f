// Tests of cli/run_command.cc: `tessera run` builds, runs and checks a workload against the
// interpreter (every workload at its default shape), on cuda with a trace where a GPU is there and
// with a one-line error where none is.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::CountLines;
using cli_testing::kGmmGpuTrace;
using cli_testing::NoGpuReason;
using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::WriteTempFile;

TEST(RunCommandTest, RunCheckJsonPassesForSmallGmm) {
  Output out = RunTessera("run GMM --shape B=2,M=32,N=16,K=8 --check --json --repeat 2");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json result = nlohmann::json::parse(out.stdout_text);
  EXPECT_TRUE(result["check"]["passed"].get<bool>());
  EXPECT_EQ(result["check"]["reference"], "interpreter");
  EXPECT_GT(result["latency_seconds"].get<double>(), 0);
  EXPECT_EQ(result["run_secs"].size(), 2u);
}

TEST(RunCommandTest, RunOnCudaWithoutGpuIsOneLineError) {
  if (NoGpuReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  Output out = RunTessera("run GMM --shape B=1,M=16,N=16,K=16 --target cuda --check");
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(CountLines(out.stdout_text), 1) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.rfind("tessera: error: target cuda: no CUDA ", 0), 0u)
      << out.stdout_text;
}

TEST(RunCommandTest, RunOnCudaWithTraceChecksAgainstTheCpuReference) {
  std::string reason = NoGpuReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  std::string trace = WriteTempFile("gmm_gpu.json", kGmmGpuTrace);
  Output out = RunTessera("run GMM --shape B=2,M=64,N=96,K=32 --target cuda --trace " + trace +
                          " --check --repeat 3 --min-repeat-ms 1");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("on cuda -arch=sm_"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("check: PASS against the interpreter"), std::string::npos)
      << out.stdout_text;
}

// The acceptance check: every workload at its default shape runs and matches.
class EveryWorkloadTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryWorkloadTest, RunCheckJsonPassesAtDefaultShape) {
  Output out = RunTessera("run " + GetParam() +
                          " --target cpu --check --json --repeat 2 "
                          "--min-repeat-ms 0");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json result = nlohmann::json::parse(out.stdout_text);
  EXPECT_TRUE(result["check"]["passed"].get<bool>()) << out.stdout_text;
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& info : ListWorkloads()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllWorkloads, EveryWorkloadTest, ::testing::ValuesIn(WorkloadNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera
