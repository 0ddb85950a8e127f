#include "model/executor.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "model/compile.h"
#include "tests/frontend/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/host.h"

namespace tessera {
namespace {

// Compiles test model NAME with default schedules into a scratch directory; returns it.
std::string Compiled(const std::string& name) {
  const std::string dir = testing::ScratchDirUntilTestEnds("executor_" + name) + "/out";
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath(name + ".onnx"));
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return dir;
  ModelCompileOptions options;
  options.target = *ResolveTarget("cpu");
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, dir, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return dir;
}

TEST(ExecutorTest, RunsACompiledModelLikeOnnxruntime) {
  // The encoder's projections have packed weights: packing happens once, at load.
  const std::string dir = Compiled("encoder");
  ExecutorOptions options;
  options.num_threads = 1;
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Load(dir, options);
  ASSERT_TRUE(ex.ok()) << ex.status();
  EXPECT_GT((*ex)->packed_calls(), 0);
  testing::TestModel m = testing::LoadTestModel("encoder");
  ASSERT_TRUE((*ex)->SetInput(0, m.input).ok());
  std::vector<double> seconds;
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE((*ex)->Run(&seconds).ok());
    EXPECT_EQ(seconds.size(), (*ex)->plan().calls.size());
    absl::StatusOr<Comparison> c = Compare((*ex)->Output(0), m.expected, 1e-4, 1e-4);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->ok()) << "run " << run << ": max abs error " << c->max_abs_error;
  }
}

TEST(ExecutorTest, InputsOfTheWrongShapeOrIndexAreNamed) {
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Load(Compiled("mlp16"));
  ASSERT_TRUE(ex.ok()) << ex.status();
  absl::Status s = (*ex)->SetInput(0, NDArray::Empty(DataType::Float32(), {3}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input "), std::string::npos) << s;
  EXPECT_EQ((*ex)->SetInput(5, NDArray::Empty(DataType::Float32(), {3})).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExecutorTest, AMissingKernelOrWeightsIsNamed) {
  const std::string dir = Compiled("mlp16");
  absl::StatusOr<CompiledModel> model = ReadCompiledModel(dir);
  ASSERT_TRUE(model.ok()) << model.status();
  std::filesystem::remove(dir + "/" + model->kernels[0].artifact);
  absl::Status s = Executor::Load(dir).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find(model->kernels[0].artifact), std::string::npos) << s;
  std::filesystem::remove(dir + "/weights.bin");
  EXPECT_EQ(Executor::Load(dir).status().message(), "cannot read " + dir + "/weights.bin");
}

}  // namespace
}  // namespace tessera
