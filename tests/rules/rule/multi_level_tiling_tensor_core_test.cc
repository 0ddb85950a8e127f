// The tensor-core (WMMA) design space end to end: the default cuda space of a float16 GMM
// on sm_80 (MultiLevelTilingTensorCore first) gives candidates (MakeCandidate: replay and the
// default cuda postprocessors) whose five WMMA steps (fill, load A, load B, mma, store) are
// tensorized by RewriteTensorize, that pass the GPU checks, that become CUDA which NVRTC
// compiles (skipped in a build without it), and whose tensorization computes what the
// unscheduled GMM computes (CheckTensorizedScheduleCorrect) at a small shape.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "schedule/tensor_intrin.h"
#include "tests/testing/schedule_testing.h"
#include "tuner/space_generator.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

Target Sm80() {
  return *Target::Parse(
      "cuda -arch=sm_80 -max_threads_per_block=1024 "
      "-max_shared_memory_per_block=49152");
}

PrimFunc HalfGmm(int64_t n, const std::string& dtype = "float16") {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", n}, {"N", n}, {"K", n}}, dtype);
}

bool NvrtcAvailable() { return !NvrtcSupportedArchs().empty(); }

// The tensor_intrin annotations Tensorize leaves on the blocks it rewrote.
std::multiset<std::string> TensorizedIntrins(const PrimFunc& func) {
  std::multiset<std::string> out;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return;
    auto it = realize->block->annotations.find("tensor_intrin");
    if (it != realize->block->annotations.end()) out.insert(std::get<std::string>(it->second));
  });
  return out;
}

// The design spaces of `func` whose blocks MultiLevelTilingTensorCore annotated.
std::vector<Schedule> TensorCoreSpaces(const PrimFunc& func, const SpaceConfig& config) {
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, config, /*seed=*/1);
  EXPECT_TRUE(spaces.ok()) << spaces.status();
  std::vector<Schedule> out;
  if (!spaces.ok()) return out;
  for (Schedule& s : *spaces) {
    if (PrintFunc(s.func()).find(attr::kAutoTensorize) != std::string::npos) out.push_back(s);
  }
  return out;
}

// `count` candidates of the tensor-core spaces of `func` with fresh decisions.
std::vector<Schedule> TensorCoreCandidates(const PrimFunc& func, int count) {
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(Sm80());
  EXPECT_TRUE(config.ok()) << config.status();
  std::vector<Schedule> spaces = TensorCoreSpaces(func, *config);
  EXPECT_EQ(spaces.size(), 1u);
  std::vector<Schedule> out;
  if (spaces.empty()) return out;
  for (int64_t seed = 1; static_cast<int>(out.size()) < count && seed < 4 * count; ++seed) {
    CandidateFailure failure;
    absl::StatusOr<Schedule> c =
        MakeCandidate(func, spaces[0].trace(), config->postprocs, seed, true, &failure);
    if (c.ok()) {
      out.push_back(*c);
    } else if (failure.stage != "VerifyGPUCode" ||
               failure.message.find("exceed") == std::string::npos) {
      // Only sampled tiles over the target's limits may be rejected.
      ADD_FAILURE() << "seed " << seed << ": " << c.status();
    }
  }
  EXPECT_EQ(static_cast<int>(out.size()), count);
  return out;
}

TEST(TensorCoreSpaceTest, Float16GmmCandidatesAreTensorizedVerifiedAndCompile) {
  const PrimFunc func = HalfGmm(256);
  const std::multiset<std::string> expected = {kWmmaFillF16, kWmmaLoadA, kWmmaLoadB, kWmmaSyncF16,
                                               kWmmaStoreF16};
  for (const Schedule& c : TensorCoreCandidates(func, 4)) {
    EXPECT_EQ(TensorizedIntrins(c.func()), expected) << PrintFunc(c.func());
    absl::Status verified = VerifyGpuCode(c.func(), Sm80());
    EXPECT_TRUE(verified.ok()) << verified;
    absl::StatusOr<CudaModule> cuda = GenerateCuda(c.func(), Sm80());
    ASSERT_TRUE(cuda.ok()) << cuda.status() << "\n" << PrintFunc(c.func());
    EXPECT_NE(cuda->source.find("wmma::mma_sync"), std::string::npos);
    // The wmma calls are warp-wide: every kernel runs whole warps along threadIdx.x.
    for (const CudaKernel& kernel : cuda->kernels) EXPECT_EQ(kernel.block[0], 32) << kernel.name;
    if (!NvrtcAvailable()) continue;
    absl::StatusOr<std::string> cubin = CompileCudaSource(cuda->source, "sm_80");
    EXPECT_TRUE(cubin.ok()) << cubin.status() << "\n" << cuda->source;
  }
}

TEST(TensorCoreSpaceTest, TensorizedCandidatesMatchTheInterpreterAtASmallShape) {
  const PrimFunc func = HalfGmm(32);
  for (const Schedule& c : TensorCoreCandidates(func, 3)) {
    EXPECT_EQ(TensorizedIntrins(c.func()).size(), 5u) << PrintFunc(c.func());
    absl::Status s = testing::CheckTensorizedScheduleCorrect(c, func);
    EXPECT_TRUE(s.ok()) << s;
  }
}

}  // namespace
}  // namespace tessera
