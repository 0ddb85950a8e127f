// The tensor-core (WMMA) design space end to end: the default cuda space of a float16 GMM
// (float16 or float32 sums) and of a bfloat16 GMM (float32 sums) on sm_80
// (MultiLevelTilingTensorCore first) gives candidates (MakeCandidate: replay and the default cuda
// postprocessors) whose five WMMA steps (fill, load A, load B, mma, store) are tensorized by
// RewriteTensorize, that pass the GPU checks, that become CUDA which NVRTC compiles (skipped in a
// build without it), and whose tensorization computes what the unscheduled GMM computes
// (CheckTensorizedScheduleCorrect) at a small shape.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "schedule/tensor_intrin.h"
#include "tests/testing/cubin_inspection.h"
#include "tests/testing/schedule_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "tuner/space_generator.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

Target Sm80() {
  return *Target::Parse(
      "cuda -arch=sm_80 -max_threads_per_block=1024 "
      "-max_shared_memory_per_block=49152");
}

// A square GMM of 16-bit floats `dtype` summed in `acc` ("" for the dtype's own).
PrimFunc NarrowGmm(int64_t n, const std::string& dtype, const std::string& acc) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", n}, {"N", n}, {"K", n}}, dtype, acc);
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
  for (int64_t seed = 1; static_cast<int>(out.size()) < count && seed < 16 * count; ++seed) {
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

struct Precision {
  std::string dtype, acc;
  std::multiset<std::string> intrins;  // fill, load A, load B, mma, store
  int image_samples;  // candidates whose compiled images are inspected (about 2 s each)
};

class TensorCoreSpacePrecisionTest : public ::testing::TestWithParam<Precision> {};

TEST_P(TensorCoreSpacePrecisionTest, GmmCandidatesAreTensorizedVerifiedAndCompile) {
  const Precision& p = GetParam();
  const PrimFunc func = NarrowGmm(256, p.dtype, p.acc);
  for (const Schedule& c : TensorCoreCandidates(func, 4)) {
    EXPECT_EQ(TensorizedIntrins(c.func()), p.intrins) << PrintFunc(c.func());
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

TEST_P(TensorCoreSpacePrecisionTest, TensorizedCandidatesMatchTheInterpreterAtASmallShape) {
  const Precision& p = GetParam();
  const PrimFunc func = NarrowGmm(32, p.dtype, p.acc);
  for (const Schedule& c : TensorCoreCandidates(func, 3)) {
    EXPECT_EQ(TensorizedIntrins(c.func()), p.intrins) << PrintFunc(c.func());
    absl::Status s = testing::CheckTensorizedScheduleCorrect(c, func);
    EXPECT_TRUE(s.ok()) << s;
  }
}

// The loops of `func` annotated to pipeline over >= 2 stages that run >= 2 iterations.
int PipelinedLoops(const PrimFunc& func) {
  int count = 0;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr) return;
    auto it = loop->annotations.find(kSoftwarePipelineStages);
    const int64_t* extent = AsConstInt(loop->extent);
    if (it != loop->annotations.end() && std::get<int64_t>(it->second) >= 2 && extent != nullptr &&
        *extent >= 2) {
      ++count;
    }
  });
  return count;
}

bool HasOpcode(const testing::KernelImage& kernel, const std::string& prefix) {
  for (const std::string& op : kernel.opcodes) {
    if (op.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Sampled candidates of the space (64 for float16 summed in float32) compile for sm_80 with
// nothing spilled, shared memory within the target's limit, and the instructions they ask for in
// the compiled image: tensor-core multiply-adds (HMMA), and where the source issues cp.async (a
// pipelined k step whose threads copy 4, 8 or 16 bytes each), LDGSTS. Whether WMMA's loads become
// ldmatrix (LDSM) is the compiler's choice (it needs 16-byte rows it can prove aligned): the count
// is printed, the default's is checked in tests/rules/default/gpu_matmul_test.cc.
TEST_P(TensorCoreSpacePrecisionTest, SampledCandidatesCompileToTheInstructionsTheyAskFor) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "no NVRTC in this build";
  const std::string cuobjdump = testing::FindCuobjdump(TESSERA_TEST_VENV_DIR);
  if (cuobjdump.empty()) {
    GTEST_SKIP() << "no cuobjdump (scripts/setup.sh puts PyPI's nvidia-cuda-cuobjdump into "
                    "build/test-venv)";
  }
  const Precision& p = GetParam();
  const PrimFunc func = NarrowGmm(256, p.dtype, p.acc);
  testing::ScopedTempDir scratch("tensor_core_images");
  int pipelined = 0, async = 0, inspected = 0, ldmatrix = 0;
  for (const Schedule& c : TensorCoreCandidates(func, p.image_samples)) {
    absl::StatusOr<CudaModule> cuda = GenerateCuda(c.func(), Sm80());
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    absl::StatusOr<std::string> cubin = CompileCudaSource(cuda->source, "sm_80");
    ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << cuda->source;
    absl::StatusOr<std::vector<testing::KernelImage>> images =
        testing::InspectCubin(*cubin, cuobjdump, scratch.path());
    ASSERT_TRUE(images.ok()) << images.status();
    ASSERT_EQ(images->size(), cuda->kernels.size());
    // Pipelined fills are cp.async where a thread copies 4, 8 or 16 bytes (codegen decides).
    const bool asks_for_cp_async =
        cuda->source.find("tessera_cp_async<", cuda->source.find("extern \"C\"")) !=
        std::string::npos;
    EXPECT_TRUE(!asks_for_cp_async || PipelinedLoops(c.func()) > 0);
    pipelined += PipelinedLoops(c.func()) > 0;
    async += asks_for_cp_async;
    for (size_t k = 0; k < images->size(); ++k) {
      const testing::KernelImage& image = (*images)[k];
      SCOPED_TRACE(image.name);
      EXPECT_EQ(image.local_bytes, 0) << "spilled";
      EXPECT_EQ(image.stack_bytes, 0) << "spilled";
      EXPECT_LE(image.shared_bytes + cuda->kernels[k].dynamic_shared_bytes,
                Sm80().max_shared_memory_per_block());
      if (!HasOpcode(image, "HMMA")) continue;  // a kernel without the product
      ++inspected;
      ldmatrix += HasOpcode(image, "LDSM");
      EXPECT_EQ(HasOpcode(image, "LDGSTS"), asks_for_cp_async) << cuda->source;
    }
  }
  EXPECT_EQ(inspected, p.image_samples);
  EXPECT_GT(async, 0) << "no candidate pipelined with cp.async";
  std::printf("%d of %d candidates pipelined (%d with cp.async), %d with ldmatrix\n", pipelined,
              inspected, async, ldmatrix);
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, TensorCoreSpacePrecisionTest,
    ::testing::Values(
        Precision{
            "float16", "", {kWmmaFillF16, kWmmaLoadA, kWmmaLoadB, kWmmaSyncF16, kWmmaStoreF16}, 8},
        Precision{
            "float16", "float32", {kWmmaFill, kWmmaLoadA, kWmmaLoadB, kWmmaSync, kWmmaStore}, 64},
        Precision{"bfloat16",
                  "float32",
                  {kWmmaFill, kWmmaLoadABf16, kWmmaLoadBBf16, kWmmaSyncBf16, kWmmaStore},
                  16}),
    [](const ::testing::TestParamInfo<Precision>& info) {
      return info.param.dtype + (info.param.acc.empty() ? "" : "_to_" + info.param.acc);
    });

TEST(TensorCoreSpaceTest, Bfloat16NeedsSm80) {
  absl::StatusOr<SpaceConfig> config =
      DefaultSpaceConfig(*Target::Parse("cuda -arch=sm_75 -max_threads_per_block=1024 "
                                        "-max_shared_memory_per_block=49152"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(TensorCoreSpaces(NarrowGmm(64, "bfloat16", "float32"), *config).empty());
  EXPECT_EQ(TensorCoreSpaces(NarrowGmm(64, "float16", "float32"), *config).size(), 1u);
}

}  // namespace
}  // namespace tessera
