// Tests of model/cuda_plan_runner.cc through the executor: a model compiled for GPU 0 runs on it
// and matches onnxruntime's outputs, run after run, with a time per call; without a GPU, loading
// such a model says why. (GPU label: the first test skips itself without a device.)
#include "model/cuda_plan_runner.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "model/compile.h"
#include "model/executor.h"
#include "tests/frontend/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/devices.h"
#include "worker/host.h"

namespace tessera {
namespace {

// Compiles test model `name` for `target` into a scratch directory; returns it.
std::string CompiledFor(const std::string& name, const Target& target) {
  const std::string dir = testing::ScratchDirUntilTestEnds("cuda_plan_" + name) + "/out";
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath(name + ".onnx"));
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return dir;
  ModelCompileOptions options;
  options.target = target;
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, dir, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return dir;
}

TEST(CudaPlanRunnerTest, RunsTheTestModelsOnTheGpuLikeOnnxruntime) {
  absl::StatusOr<Target> gpu = ResolveCudaTarget("cuda");
  if (!gpu.ok()) GTEST_SKIP() << gpu.status();
  for (const std::string name : {"cnn", "encoder", "decoder"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Load(CompiledFor(name, *gpu));
    ASSERT_TRUE(ex.ok()) << ex.status();
    EXPECT_EQ((*ex)->packed_calls(), 0);
    testing::TestModel m = testing::LoadTestModel(name);
    ASSERT_TRUE((*ex)->SetInput(0, m.input).ok());
    for (int run = 0; run < 2; ++run) {
      std::vector<double> seconds;
      absl::Status ran = (*ex)->Run(run == 0 ? &seconds : nullptr);
      ASSERT_TRUE(ran.ok()) << ran;
      if (run == 0) {
        ASSERT_EQ(seconds.size(), (*ex)->plan().calls.size());
        for (double s : seconds) EXPECT_GT(s, 0);
      }
      absl::StatusOr<Comparison> c = Compare((*ex)->Output(0), m.expected, 1e-4, 1e-4);
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_TRUE(c->ok()) << "run " << run << ": max abs error " << c->max_abs_error;
    }
  }
}

TEST(CudaPlanRunnerTest, WithoutAGpuLoadingSaysWhy) {
#if !TESSERA_WITH_CUDA
  GTEST_SKIP() << "built without CUDA: no cuda model compiles";
#endif
  if (ResolveCudaTarget("cuda").ok()) GTEST_SKIP() << "this machine has a GPU";
  const std::string dir = CompiledFor("cnn", *ResolveTarget("cuda -arch=sm_80"));
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Load(dir);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kFailedPrecondition) << ex.status();
  EXPECT_TRUE(absl::StrContains(ex.status().message(), "CUDA")) << ex.status();
}

TEST(CudaPlanRunnerTest, TargetStringsOfAGpu) {
  EXPECT_TRUE(IsCudaTargetString("cuda"));
  EXPECT_TRUE(IsCudaTargetString("cuda -arch=sm_90"));
  EXPECT_FALSE(IsCudaTargetString("cpu -cores=2"));
  EXPECT_FALSE(IsCudaTargetString("cudax"));
}

}  // namespace
}  // namespace tessera
