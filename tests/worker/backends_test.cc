// The builder and runner by target (worker/backends.cc): a cpu target gets the host C compiler
// and the CPU runner, whose kernel RunKernel runs on the caller's arrays; a cuda target gets
// NVRTC and the CUDA runner (here only their names and errors: GPU runs are in
// cuda_runner_test.cc).
#include "worker/backends.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/interpreter.h"
#include "tests/codegen/test_funcs.h"
#include "worker/check.h"

namespace tessera {
namespace {

using testing_funcs::Matmul;

Target Cpu() { return *Target::Parse("cpu"); }
Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

TEST(BackendsTest, CpuTargetBuildsWithTheHostCompilerAndRunsTheKernelOnTheCallersArrays) {
  const PrimFunc f = Matmul(8, 8, 8);
  BackendBuildOptions options;
  options.parallelism = 1;
  std::unique_ptr<Builder> builder = NewBuilder(Cpu(), options);
  std::vector<BuildResult> built = builder->Build({BuildInput{f, Cpu()}});
  ASSERT_EQ(built.size(), 1u);
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;

  std::vector<NDArray> actual = RandomArgs(f, /*seed=*/4);
  std::vector<NDArray> expected;
  std::vector<NDArray*> pointers;
  for (const NDArray& a : actual) expected.push_back(a.Clone());
  for (NDArray& e : expected) pointers.push_back(&e);
  ASSERT_TRUE(Interpret(f, pointers).ok());
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  absl::StatusOr<RunResult> ran = RunKernel(Cpu(), built[0], &actual, once);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  for (size_t i = 0; i < actual.size(); ++i) {
    absl::StatusOr<Comparison> cmp = Compare(actual[i], expected[i]);
    ASSERT_TRUE(cmp.ok()) << cmp.status();
    EXPECT_TRUE(cmp->ok()) << "argument " << i;
  }

  std::vector<RunResult> timed = NewRunner(Cpu())->Run(
      {RunInput{built[0].artifact_path, built[0].symbol, ArgInfosOf(f)}}, once);
  ASSERT_EQ(timed.size(), 1u);
  EXPECT_TRUE(timed[0].ok()) << timed[0].error_msg;
  EXPECT_EQ(timed[0].run_secs.size(), 1u);
}

TEST(BackendsTest, CudaTargetGetsTheNvrtcBuilderAndTheCudaRunner) {
  // The NVRTC builder refuses a cpu input by name; the C builder would compile it.
  std::vector<BuildResult> built = NewBuilder(Cuda())->Build({BuildInput{Matmul(8, 8, 8), Cpu()}});
  ASSERT_EQ(built.size(), 1u);
  EXPECT_FALSE(built[0].ok());
  EXPECT_NE(built[0].error_msg.find("nvrtc builder"), std::string::npos) << built[0].error_msg;
  // The CUDA runner reads the module itself (the CPU runner's child would dlopen it).
  const RunInput missing{"/nonexistent/kernel.cubin", "kernel", ArgInfosOf(Matmul(8, 8, 8))};
  std::vector<RunResult> ran = NewRunner(Cuda())->Run({missing}, RunnerConfig());
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_FALSE(ran[0].ok());
  EXPECT_EQ(ran[0].error_msg, "cannot read /nonexistent/kernel.cubin");
  std::vector<RunResult> cpu = NewRunner(Cpu())->Run({missing}, RunnerConfig());
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_FALSE(cpu[0].ok());
  EXPECT_NE(cpu[0].error_msg, ran[0].error_msg);
}

}  // namespace
}  // namespace tessera
