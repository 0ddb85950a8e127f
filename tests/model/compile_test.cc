#include "model/compile.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/host.h"

namespace tessera {
namespace {

TEST(CompileTest, DefaultsOnlyWritesTheWholeDirectory) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("cnn.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  ModelCompileOptions options;
  options.target = *ResolveTarget("cpu");
  const std::string dir = testing::ScratchDirUntilTestEnds("compile") + "/out";
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, dir, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->warnings.empty());
  ASSERT_EQ(result->compiled.kernels.size(), m->tasks.size());
  for (const CompiledKernel& k : result->compiled.kernels) {
    EXPECT_EQ(k.schedule.kind, "default") << k.task;
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + k.artifact)) << k.artifact;
  }
  for (const char* file : {"plan.json", "weights.bin", "model.onnx"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
  }
  absl::StatusOr<CompiledModel> back = ReadCompiledModel(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->plan.calls.size(), m->fused.functions.size());
}

TEST(CompileTest, WithoutDefaultsTasksStayUnscheduled) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("mlp16.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  ModelCompileOptions options;
  options.target = *ResolveTarget("cpu");
  options.apply_defaults = false;
  absl::StatusOr<ModelCompileResult> result =
      CompileModel(*m, testing::ScratchDirUntilTestEnds("compile_plain"), options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const CompiledKernel& k : result->compiled.kernels) {
    EXPECT_EQ(k.schedule.kind, "unscheduled") << k.task;
  }
}

TEST(CompileTest, OnlyCpuTargets) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("mlp16.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  ModelCompileOptions options;
  absl::StatusOr<Target> cuda = Target::Parse("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  options.target = *cuda;
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, "/nonexistent/out", options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace tessera
