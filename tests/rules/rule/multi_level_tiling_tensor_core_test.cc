// The tensor-core design space end to end: the default cuda space of a float16 GMM (float16 or
// float32 sums) and of a bfloat16 GMM (float32 sums) on sm_80 (MultiLevelTilingTensorCore first,
// with Tessera's own ldmatrix / mma.sync fragments) gives candidates (MakeCandidate: replay and
// the default cuda postprocessors) whose five steps (fill, load A, load B, mma, store) are
// tensorized by RewriteTensorize, that pass the GPU checks, that become CUDA which NVRTC compiles
// (skipped in a build without it), and whose tensorization computes what the unscheduled GMM
// computes (CheckTensorizedScheduleCorrect) at a small shape. Then the float32 SIMT space
// (MultiLevelTiling) on sm_80: its sampled pipeline depth, cp.async in the compiled images of
// pipelined candidates, and candidates that compute what the GMM computes.
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

// The design spaces of `func` that MultiLevelTilingTensorCore (`tensor_core`) or MultiLevelTiling
// tiled.
std::vector<Schedule> TiledSpaces(const PrimFunc& func, const SpaceConfig& config,
                                  bool tensor_core = true) {
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, config, /*seed=*/1);
  EXPECT_TRUE(spaces.ok()) << spaces.status();
  std::vector<Schedule> out;
  if (!spaces.ok()) return out;
  for (Schedule& s : *spaces) {
    const std::string printed = PrintFunc(s.func());
    const bool tensorized = printed.find(attr::kAutoTensorize) != std::string::npos;
    const bool tiled = printed.find(attr::kTilingStructure) != std::string::npos;
    if (tensor_core ? tensorized : tiled && !tensorized) out.push_back(s);
  }
  return out;
}

// `count` candidates of the tensor-core space (or the SIMT space) of `func` on sm_80 with fresh
// decisions.
std::vector<Schedule> SpaceCandidates(const PrimFunc& func, int count, bool tensor_core = true) {
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(Sm80());
  EXPECT_TRUE(config.ok()) << config.status();
  std::vector<Schedule> spaces = TiledSpaces(func, *config, tensor_core);
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
  bool ldmatrix = true;  // 16-bit fragments load with ldmatrix, TF32's one element a lane
};

class TensorCoreSpacePrecisionTest : public ::testing::TestWithParam<Precision> {};

TEST_P(TensorCoreSpacePrecisionTest, GmmCandidatesAreTensorizedVerifiedAndCompile) {
  const Precision& p = GetParam();
  const PrimFunc func = NarrowGmm(256, p.dtype, p.acc);
  for (const Schedule& c : SpaceCandidates(func, 4)) {
    EXPECT_EQ(TensorizedIntrins(c.func()), p.intrins) << PrintFunc(c.func());
    absl::Status verified = VerifyGpuCode(c.func(), Sm80());
    EXPECT_TRUE(verified.ok()) << verified;
    absl::StatusOr<CudaModule> cuda = GenerateCuda(c.func(), Sm80());
    ASSERT_TRUE(cuda.ok()) << cuda.status() << "\n" << PrintFunc(c.func());
    EXPECT_NE(cuda->source.find("tessera_mma::mma_sync("), std::string::npos);
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
  for (const Schedule& c : SpaceCandidates(func, 3)) {
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

// The kernel images of `source` compiled by NVRTC for `arch`, read by `cuobjdump` in `dir`.
absl::StatusOr<std::vector<testing::KernelImage>> Images(const std::string& source,
                                                         const std::string& arch,
                                                         const std::string& cuobjdump,
                                                         const std::string& dir) {
  absl::StatusOr<std::string> cubin = CompileCudaSource(source, arch);
  if (!cubin.ok()) return cubin.status();
  return testing::InspectCubin(*cubin, cuobjdump, dir);
}

// Whether a kernel of `cuda` issues cp.async: pipelined fills where a thread copies 4, 8 or 16
// bytes (codegen decides).
bool AsksForCpAsync(const CudaModule& cuda) {
  return cuda.source.find("tessera_cp_async<", cuda.source.find("extern \"C\"")) !=
         std::string::npos;
}

// The pipelined candidates of a sample and those whose code issues cp.async.
struct PipelineCounts {
  int pipelined = 0, async = 0;

  // Counts candidate `c` compiled to `cuda`; whether `cuda` issues cp.async (only pipelined
  // candidates may).
  bool Add(const Schedule& c, const CudaModule& cuda) {
    const bool asks_for_cp_async = AsksForCpAsync(cuda);
    EXPECT_TRUE(!asks_for_cp_async || PipelinedLoops(c.func()) > 0);
    pipelined += PipelinedLoops(c.func()) > 0;
    async += asks_for_cp_async;
    return asks_for_cp_async;
  }
};

// What a kernel compiled for `arch` may hold in shared memory: sm_90a images count 1 KiB the
// system reserves per block.
int64_t SharedLimit(const std::string& arch) {
  return Sm80().max_shared_memory_per_block() + (arch == "sm_90a" ? 1024 : 0);
}

// Sampled candidates of the space (64 for float16 summed in float32) compile for sm_80 with
// nothing spilled, shared memory within the target's limit, and the instructions they ask for in
// the compiled image: tensor-core multiply-adds (HMMA) fed by ldmatrix (LDSM), and where the
// source issues cp.async (a pipelined k step whose threads copy 4, 8 or 16 bytes each), LDGSTS;
// the same for sm_90a.
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
  PipelineCounts counts;
  int inspected = 0;
  for (const Schedule& c : SpaceCandidates(func, p.image_samples)) {
    absl::StatusOr<CudaModule> cuda = GenerateCuda(c.func(), Sm80());
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    const bool asks_for_cp_async = counts.Add(c, *cuda);
    ++inspected;
    // Hopper (sm_90a) runs the same mma.sync, ldmatrix and cp.async.
    for (const char* arch : {"sm_80", "sm_90a"}) {
      absl::StatusOr<std::vector<testing::KernelImage>> images =
          Images(cuda->source, arch, cuobjdump, scratch.path());
      ASSERT_TRUE(images.ok()) << arch << ": " << images.status() << "\n" << cuda->source;
      ASSERT_EQ(images->size(), cuda->kernels.size());
      int products = 0;
      for (size_t k = 0; k < images->size(); ++k) {
        const testing::KernelImage& image = (*images)[k];
        SCOPED_TRACE(image.name + " for " + arch);
        EXPECT_EQ(image.local_bytes, 0) << "spilled";
        EXPECT_EQ(image.stack_bytes, 0) << "spilled";
        EXPECT_LE(image.shared_bytes + cuda->kernels[k].dynamic_shared_bytes, SharedLimit(arch));
        if (!HasOpcode(image, "HMMA")) continue;  // a kernel without the product
        ++products;
        EXPECT_EQ(HasOpcode(image, "LDSM"), p.ldmatrix);
        EXPECT_EQ(HasOpcode(image, "LDGSTS"), asks_for_cp_async) << cuda->source;
      }
      EXPECT_EQ(products, 1) << arch;
    }
  }
  EXPECT_EQ(inspected, p.image_samples);
  EXPECT_GT(counts.async, 0) << "no candidate pipelined with cp.async";
  std::printf("%d of %d candidates pipelined (%d with cp.async), each built for sm_80 and sm_90a\n",
              counts.pipelined, inspected, counts.async);
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, TensorCoreSpacePrecisionTest,
    ::testing::Values(
        Precision{"float16", "", {kMmaFillF16, kMmaLoadA, kMmaLoadB, kMmaSyncF16, kMmaStoreF16}, 8},
        Precision{"float16", "float32", {kMmaFill, kMmaLoadA, kMmaLoadB, kMmaSync, kMmaStore}, 64},
        Precision{"bfloat16",
                  "float32",
                  {kMmaFill, kMmaLoadABf16, kMmaLoadBBf16, kMmaSyncBf16, kMmaStore},
                  16},
        Precision{"float32",
                  "tf32",
                  {kMmaFill, kMmaLoadATf32, kMmaLoadBTf32, kMmaSyncTf32, kMmaStore},
                  16,
                  false}),
    [](const ::testing::TestParamInfo<Precision>& info) {
      return info.param.dtype + (info.param.acc.empty() ? "" : "_to_" + info.param.acc);
    });

TEST(TensorCoreSpaceTest, Bfloat16NeedsSm80) {
  absl::StatusOr<SpaceConfig> config =
      DefaultSpaceConfig(*Target::Parse("cuda -arch=sm_75 -max_threads_per_block=1024 "
                                        "-max_shared_memory_per_block=49152"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(TiledSpaces(NarrowGmm(64, "bfloat16", "float32"), *config).empty());
  EXPECT_EQ(TiledSpaces(NarrowGmm(64, "float16", "float32"), *config).size(), 1u);
}

// ---- The float32 SIMT space (MultiLevelTiling) on sm_80 ---------------------------------------

// The loop the shared tiles are filled at gets a sampled pipeline depth from sm_80 (cp.async);
// before, none.
TEST(SimtSpaceTest, SamplesPipelineStagesFromSm80) {
  const PrimFunc func = NarrowGmm(256, "float32", "");
  for (const auto& [target, sampled] :
       {std::pair{Sm80(), true},
        std::pair{*Target::Parse("cuda -arch=sm_75 -max_threads_per_block=1024 "
                                 "-max_shared_memory_per_block=49152"),
                  false}}) {
    absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(target);
    ASSERT_TRUE(config.ok()) << config.status();
    std::vector<Schedule> spaces = TiledSpaces(func, *config, /*tensor_core=*/false);
    ASSERT_EQ(spaces.size(), 1u);
    EXPECT_EQ(PrintFunc(spaces[0].func()).find(kSoftwarePipelineStages) != std::string::npos,
              sampled)
        << target.ToString();
  }
}

// Sampled candidates of a float32 GMM's SIMT space on sm_80 (16, each compiled for sm_80 and
// sm_90a): pipelined ones fill their shared tiles by cp.async (LDGSTS in the image) where a thread
// copies 4, 8 or 16 bytes, nothing spills, shared memory stays within the limit, and candidates
// compute what the GMM computes.
TEST(SimtSpaceTest, Float32CandidatesPipelineWithCpAsyncCompileAndMatch) {
  const PrimFunc small = NarrowGmm(64, "float32", "");
  for (const Schedule& c : SpaceCandidates(small, 4, /*tensor_core=*/false)) {
    absl::Status s = testing::CheckScheduleCorrect(c, small);
    EXPECT_TRUE(s.ok()) << s;
  }
  if (!NvrtcAvailable()) GTEST_SKIP() << "no NVRTC in this build";
  const std::string cuobjdump = testing::FindCuobjdump(TESSERA_TEST_VENV_DIR);
  if (cuobjdump.empty()) GTEST_SKIP() << "no cuobjdump in build/test-venv";
  const PrimFunc func = NarrowGmm(256, "float32", "");
  testing::ScopedTempDir scratch("simt_images");
  PipelineCounts counts;
  int samples = 0;
  for (const Schedule& c : SpaceCandidates(func, 16, /*tensor_core=*/false)) {
    ++samples;
    absl::StatusOr<CudaModule> cuda = GenerateCuda(c.func(), Sm80());
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    const bool asks_for_cp_async = counts.Add(c, *cuda);
    for (const char* arch : {"sm_80", "sm_90a"}) {
      absl::StatusOr<std::vector<testing::KernelImage>> images =
          Images(cuda->source, arch, cuobjdump, scratch.path());
      ASSERT_TRUE(images.ok()) << arch << ": " << images.status() << "\n" << cuda->source;
      bool ldgsts = false;
      for (size_t k = 0; k < images->size(); ++k) {
        const testing::KernelImage& image = (*images)[k];
        EXPECT_EQ(image.local_bytes, 0) << image.name << " spilled for " << arch;
        EXPECT_LE(image.shared_bytes + cuda->kernels[k].dynamic_shared_bytes, SharedLimit(arch));
        ldgsts = ldgsts || HasOpcode(image, "LDGSTS");
      }
      EXPECT_EQ(ldgsts, asks_for_cp_async) << arch << "\n" << cuda->source;
    }
  }
  EXPECT_GT(counts.async, 0) << "no candidate pipelined with cp.async";
  std::printf("%d of %d candidates pipelined (%d with cp.async), each built for sm_80 and sm_90a\n",
              counts.pipelined, samples, counts.async);
}

}  // namespace
}  // namespace tessera
