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
  ASSERT_EQ(times->first_rounds_won.size(), c.model.kernels.size());
  EXPECT_EQ(times->rounds, 2);
  for (size_t k = 0; k < c.model.kernels.size(); ++k) {
    EXPECT_GT(times->first_secs[k], 0) << c.model.kernels[k].task;
    EXPECT_GT(times->second_secs[k], 0) << c.model.kernels[k].task;
    EXPECT_GE(times->first_rounds_won[k], 0) << c.model.kernels[k].task;
    EXPECT_LE(times->first_rounds_won[k], 2) << c.model.kernels[k].task;
  }
}

// A kernel wins beyond the noise with its median not above the other's and all rounds but one
// won; a lower median won in fewer rounds, or a higher one won in all, does not.
TEST(KernelRunoffTest, WinsBeyondTheNoiseNeedAllRoundsButOne) {
  KernelTimesInModel times;
  times.rounds = 7;
  times.first_secs = {1.0, 1.0, 1.0, 1.0, 1.1};
  times.second_secs = {1.5, 1.0, 1.01, 1.01, 1.0};
  times.first_rounds_won = {7, 6, 6, 5, 7};
  EXPECT_TRUE(FirstWinsBeyondNoise(times, 0));
  EXPECT_TRUE(FirstWinsBeyondNoise(times, 1));
  EXPECT_TRUE(FirstWinsBeyondNoise(times, 2));
  EXPECT_FALSE(FirstWinsBeyondNoise(times, 3));
  EXPECT_FALSE(FirstWinsBeyondNoise(times, 4));
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
