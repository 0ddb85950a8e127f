// Tests of codegen/lower_gpu.cc (LowerForGpu, SplitKernels, HasBlocks) on the lowered IR:
// blocks disappear, each bound loop nest is a kernel with its launch shape and parameters,
// virtual threads become serial loops, and what cannot become kernels is refused by name. What
// the CUDA emitter prints from it is in codegen_cuda_test.cc.
#include "codegen/lower_gpu.h"

#include <string>
#include <vector>

#include "frontend/compute.h"
#include "gtest/gtest.h"
#include "tests/codegen/gpu_schedules.h"
#include "tests/codegen/lower_gpu_testing.h"

namespace tessera {
namespace {

using gpu_testing::Loops;
using gpu_testing::Ok;
using lower_gpu_testing::Sm80;

// B = A * 2 and C = A + 1 (64 x 64), each row on a block and each column on a thread.
PrimFunc TwoBoundOutputs() {
  Tensor a = Placeholder({64, 64}, DataType::Float32(), "A");
  Tensor b = Compute(
      {64, 64},
      [&](const std::vector<Var>& i) {
        return a({i[0], i[1]}) * 2;
      },
      "B");
  Tensor c = Compute(
      {64, 64},
      [&](const std::vector<Var>& i) {
        return a({i[0], i[1]}) + 1;
      },
      "C");
  Schedule sch = Schedule::Create(*CreatePrimFunc("main", {a, b, c}), 0);
  for (const char* name : {"B", "C"}) {
    std::vector<LoopRV> l = Loops(sch.GetLoops(*sch.GetBlock(name)));
    Ok(sch.Bind(l[0], "blockIdx.x"));
    Ok(sch.Bind(l[1], "threadIdx.x"));
  }
  return sch.func();
}

TEST(LowerForGpuTest, BlocksDisappear) {
  PrimFunc func = TwoBoundOutputs();
  EXPECT_TRUE(HasBlocks(func));
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(func, Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_FALSE(HasBlocks(*lowered));
}

TEST(LowerForGpuTest, EachBoundLoopNestIsAKernelWithItsShapeAndParameters) {
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(TwoBoundOutputs(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::vector<GpuKernelInfo>> kernels = SplitKernels(*lowered);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_EQ(kernels->size(), 2u);
  EXPECT_EQ((*kernels)[0].name, "main_kernel0");
  EXPECT_EQ((*kernels)[1].name, "main_kernel1");
  for (const GpuKernelInfo& k : *kernels) {
    EXPECT_EQ(k.grid[0], 64) << k.name;
    EXPECT_EQ(k.block[0], 64) << k.name;
    EXPECT_EQ(k.shared_bytes, 0) << k.name;
  }
  EXPECT_EQ((*kernels)[0].param_indices, (std::vector<int>{0, 1}));
  EXPECT_EQ((*kernels)[1].param_indices, (std::vector<int>{0, 2}));
}

TEST(LowerForGpuTest, SharedTilesAreCountedInTheKernelsSharedBytes) {
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(gpu_testing::ScheduleGmm({}).func(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::vector<GpuKernelInfo>> kernels = SplitKernels(*lowered);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_EQ(kernels->size(), 1u);
  // One k-tile of A (64 x 16) and of B (16 x 64) in float32.
  EXPECT_EQ((*kernels)[0].shared_bytes, 2 * 64 * 16 * 4);
  EXPECT_EQ((*kernels)[0].block[0] * (*kernels)[0].block[1], 16 * 16);
}

TEST(LowerForGpuTest, VirtualThreadsBecomeSerialLoopsCountedPerKernel) {
  absl::StatusOr<PrimFunc> lowered =
      LowerForGpu(gpu_testing::ScheduleVthread(64, 2).func(), Sm80());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::vector<GpuKernelInfo>> kernels = SplitKernels(*lowered);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_EQ(kernels->size(), 1u);
  EXPECT_EQ((*kernels)[0].vthreads, 2);
  EXPECT_EQ((*kernels)[0].block[0], 32);
  EXPECT_EQ((*kernels)[0].block[1], 8);
}

TEST(LowerForGpuTest, GlobalIntermediateIsRefusedByName) {
  Tensor a = Placeholder({16}, DataType::Float32(), "A");
  Tensor t = Compute(
      {16}, [&](const std::vector<Var>& i) { return a({i[0]}) * 2; }, "T");
  Tensor b = Compute(
      {16}, [&](const std::vector<Var>& i) { return t({i[0]}) + 1; }, "B");
  Schedule sch = Schedule::Create(*CreatePrimFunc("main", {a, b}), 0);
  for (const char* name : {"T", "B"}) {
    Ok(sch.Bind(Loops(sch.GetLoops(*sch.GetBlock(name)))[0], "threadIdx.x"));
  }
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(sch.func(), Sm80());
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(lowered.status().message()).find("intermediate buffer T is in global"),
            std::string::npos)
      << lowered.status();
}

}  // namespace
}  // namespace tessera
