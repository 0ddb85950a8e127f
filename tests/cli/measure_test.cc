// Tests of cli/measure.cc called in process on the host CPU: a cpu target resolves to the
// host's, a small GEMM is built, timed and checked against itself, and the JSON and exit code
// follow the outcome. (CUDA measurement is covered by the gpu-labelled `run` tests.)
#include "cli/measure.h"

#include <string>

#include "frontend/workloads.h"
#include "gtest/gtest.h"

namespace tessera {
namespace cli {
namespace {

TEST(CliMeasureTest, CpuTargetResolvesToTheHost) {
  absl::StatusOr<Target> target = ResolveRunnableTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_FALSE(target->is_cuda());
  EXPECT_FALSE(ResolveRunnableTarget("not-a-target").ok());
}

TEST(CliMeasureTest, BuildsTimesAndChecksASmallGemm) {
  const PrimFunc gmm = *MakeWorkload("GMM", {{"M", 16}, {"N", 16}, {"K", 16}});
  MeasureOptions options;
  options.check = true;
  options.repeat = 3;
  options.min_repeat_ms = 0;
  absl::StatusOr<Measurement> m = BuildAndMeasure(gmm, gmm, *ResolveRunnableTarget("cpu"), options);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->run_secs.size(), 3u);
  EXPECT_GT(m->latency_seconds, 0);
  EXPECT_EQ(m->flops, 2.0 * 16 * 16 * 16);
  EXPECT_TRUE(m->checked);
  EXPECT_EQ(m->ExitCode(), 0);
  nlohmann::json json = m->ToJson();
  EXPECT_EQ(json["run_secs"].size(), 3u);
  EXPECT_TRUE(json.contains("check"));
  EXPECT_EQ(json["target"], m->target);
}

}  // namespace
}  // namespace cli
}  // namespace tessera
