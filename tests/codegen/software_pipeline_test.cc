// Tests of codegen/software_pipeline.cc through CUDA code generation: a GMM whose k step is
// annotated software_pipeline_stages keeps that many copies of its shared tiles, fills the next
// ones ahead with cp.async on sm_80 (plain stores before), waits for the oldest, and compiles
// with NVRTC; the interpreter runs the annotated schedule as written; loops that cannot be
// pipelined are refused with the reason.
#include "codegen/software_pipeline.h"

#include <string>

#include "codegen/codegen_cuda.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "tests/codegen/gpu_schedules.h"
#include "tests/codegen/nvrtc_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using gpu_testing::GmmTiling;

Target Arch(const std::string& arch) {
  absl::StatusOr<Target> t = Target::Parse("cuda -arch=" + arch);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// The kernels of a translation unit (after the prelude).
std::string Kernels(const std::string& source) {
  const size_t start = source.find("extern \"C\"");
  return start == std::string::npos ? "" : source.substr(start);
}

GmmTiling Pipelined(int64_t stages) {
  GmmTiling t;
  t.pipeline_stages = stages;
  return t;
}

void ExpectCompiles(const std::string& source, const std::string& arch) {
  absl::Status compiled = nvrtc_testing::CompileWithNvrtc(source, arch);
  EXPECT_TRUE(compiled.ok()) << arch << ": " << compiled << "\n" << source;
}

TEST(SoftwarePipelineTest, TwoStagesFillTheNextTilesWithCpAsyncWhileTheseCompute) {
  const Schedule sch = gpu_testing::ScheduleGmm(Pipelined(2));
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Arch("sm_80"));
  ASSERT_TRUE(module.ok()) << module.status() << "\n" << PrintFunc(sch.func());
  const std::string kernels = Kernels(module->source);
  // 64 x 16 float tiles of A (and 16 x 64 of B), twice over.
  EXPECT_NE(kernels.find("A_shared[2048]"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("B_shared[2048]"), std::string::npos) << kernels;
  // Prologue: stage 0 filled and committed; then per step: wait for it, barrier, fill the next
  // stage (16-byte copies of four floats), commit, compute.
  const size_t prologue = kernels.find("tessera_cp_async<16>(");
  const size_t loop = kernels.find("for (long long k_0 = 0; k_0 < 16; ++k_0)");
  ASSERT_NE(prologue, std::string::npos) << kernels;
  ASSERT_NE(loop, std::string::npos) << kernels;
  EXPECT_LT(prologue, loop);
  const size_t wait = kernels.find("tessera_cp_async_wait(0);", loop);
  const size_t barrier = kernels.find("__syncthreads();", wait);
  const size_t ahead = kernels.find("tessera_cp_async<16>(", barrier);
  const size_t commit = kernels.find("tessera_cp_async_commit();", ahead);
  EXPECT_NE(wait, std::string::npos) << kernels;
  EXPECT_NE(barrier, std::string::npos) << kernels;
  EXPECT_NE(ahead, std::string::npos) << kernels;
  EXPECT_NE(commit, std::string::npos) << kernels;
  ExpectCompiles(module->source, "sm_80");
  ExpectCompiles(module->source, "sm_90");
}

TEST(SoftwarePipelineTest, BeforeSm80TheFillsArePlainStoresIntoTheStages) {
  const Schedule sch = gpu_testing::ScheduleGmm(Pipelined(2));
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Arch("sm_75"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string kernels = Kernels(module->source);
  EXPECT_NE(kernels.find("A_shared[2048]"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("tessera_cp_async"), std::string::npos) << kernels;
  ExpectCompiles(module->source, "sm_75");
}

TEST(SoftwarePipelineTest, ThreeStagesLeaveOneGroupInFlight) {
  const Schedule sch = gpu_testing::ScheduleGmm(Pipelined(3));
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Arch("sm_80"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string kernels = Kernels(module->source);
  EXPECT_NE(kernels.find("A_shared[3072]"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("tessera_cp_async_wait(1);"), std::string::npos) << kernels;
  ExpectCompiles(module->source, "sm_80");
}

TEST(SoftwarePipelineTest, StagesAreCappedAtTheTripCount) {
  GmmTiling t = Pipelined(4);
  t.n = 64;       // one 64 x 64 tile
  t.k_tile = 32;  // k in 2 steps of 32: 2 stages at most
  const Schedule sch = gpu_testing::ScheduleGmm(t);
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Arch("sm_80"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string kernels = Kernels(module->source);
  EXPECT_NE(kernels.find("A_shared[4096]"), std::string::npos) << kernels;  // 2 x 64 x 32
  EXPECT_NE(kernels.find("tessera_cp_async_wait(0);"), std::string::npos) << kernels;
}

TEST(SoftwarePipelineTest, TheInterpreterRunsTheAnnotatedScheduleAsWritten) {
  GmmTiling t = Pipelined(2);
  t.n = 64;
  t.threads = 8;
  const Schedule sch = gpu_testing::ScheduleGmm(t);
  absl::Status same = testing::CheckSameOutputs(
      *MakeWorkload("GMM", {{"B", 1}, {"M", 64}, {"N", 64}, {"K", 64}}), sch.func());
  EXPECT_TRUE(same.ok()) << same;
}

TEST(SoftwarePipelineTest, ALoopThatFillsNoSharedBufferIsRefused) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = gpu_testing::Loops(sch.GetLoops(c));
  // The innermost serial loop of the product (k_1): nothing is filled in it.
  LoopRV ki = loops[loops.size() - 3];
  gpu_testing::Ok(sch.Annotate(ki, kSoftwarePipelineStages, InstValue::Int(2)));
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Arch("sm_80"));
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(module.status().message().find("software pipeline: loop k_1 allocates no shared "
                                           "buffer to fill"),
            std::string::npos)
      << module.status();
}

}  // namespace
}  // namespace tessera
