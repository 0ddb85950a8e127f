#include "model/kernel_runoff.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "model/compile.h"
#include "tests/frontend/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/host.h"

namespace tessera {
namespace {

struct Compiled {
  std::string dir;
  CompiledModel model;
  std::string weights;
};

Compiled CompileCnn() {
  Compiled c;
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("cnn.onnx"));
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return c;
  ModelCompileOptions options;
  options.target = *ResolveTarget("cpu");
  c.dir = testing::ScratchDirUntilTestEnds("kernel_runoff");
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, c.dir, options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return c;
  c.model = result->compiled;
  std::ifstream in(c.dir + "/weights.bin", std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  c.weights = bytes.str();
  return c;
}

// Every kernel of both models gets a time: the median of its calls' summed time per run.
TEST(KernelRunoffTest, TimesEveryKernelOfBothModels) {
  Compiled c = CompileCnn();
  ASSERT_FALSE(c.model.kernels.empty());
  KernelRunoffOptions options;
  options.rounds = 2;
  options.runs_per_round = 2;
  absl::StatusOr<KernelTimesInModel> times =
      TimeKernelsInModel(c.model, c.model, c.dir, c.weights, options);
  ASSERT_TRUE(times.ok()) << times.status();
  ASSERT_EQ(times->first_secs.size(), c.model.kernels.size());
  ASSERT_EQ(times->second_secs.size(), c.model.kernels.size());
  for (size_t k = 0; k < c.model.kernels.size(); ++k) {
    EXPECT_GT(times->first_secs[k], 0) << c.model.kernels[k].task;
    EXPECT_GT(times->second_secs[k], 0) << c.model.kernels[k].task;
  }
}

TEST(KernelRunoffTest, ModelsOfDifferentPlansAreRefused) {
  Compiled c = CompileCnn();
  ASSERT_FALSE(c.model.plan.calls.empty());
  CompiledModel other = c.model;
  other.plan.calls.pop_back();
  absl::StatusOr<KernelTimesInModel> times = TimeKernelsInModel(c.model, other, c.dir, c.weights);
  EXPECT_EQ(times.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(times.status().message(), "kernel runoff: the two models do not share one plan");
}

}  // namespace
}  // namespace tessera
