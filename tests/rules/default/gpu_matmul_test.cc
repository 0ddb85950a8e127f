// The Matmul default rule's tensor-core path (rules/default/gpu_matmul.cc): a float16 GMM
// (float16 or float32 sums) and a bfloat16 GMM (float32 sums) on sm_80 are tensorized with
// Tessera's own fragments (ldmatrix, mma.sync), verified and compile to those instructions, and
// compute what the GMM computes; sm_75 takes WMMA's fragments; other architectures, dtypes and
// shapes take the SIMT path. No GPU needed.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "codegen/codegen_cuda.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/default/default_rule.h"
#include "schedule/tensor_intrin.h"
#include "schedule/trace.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/cubin_inspection.h"
#include "tests/testing/schedule_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using default_schedule_testing::Applied;
using default_schedule_testing::ApplyFirst;
using default_schedule_testing::CudaTarget;
using default_schedule_testing::HalfGmm;

// Intrinsic names of the Tensorize instructions of `sch`'s trace.
std::multiset<std::string> TensorizedIntrins(const Schedule& sch) {
  std::multiset<std::string> out;
  for (const Instruction& inst : sch.trace().insts()) {
    if (std::string(inst.kind->name) == "Tensorize") out.insert(inst.attrs[0].as_string());
  }
  return out;
}

// A GMM of 16-bit floats `dtype` summed in `acc` ("" for the dtype's own).
PrimFunc NarrowGmm(int64_t m, int64_t n, int64_t k, const std::string& dtype,
                   const std::string& acc) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, dtype, acc);
}

// The kernel images of `source` compiled by NVRTC for `arch` and read by cuobjdump; `skip` says
// why not when this build has no NVRTC or the venv no cuobjdump (the caller skips the test).
absl::StatusOr<std::vector<testing::KernelImage>> CompiledImages(const std::string& source,
                                                                 const std::string& arch,
                                                                 std::string* skip) {
  absl::StatusOr<std::string> cubin = CompileCudaSource(source, arch);
  if (cubin.status().code() == absl::StatusCode::kFailedPrecondition) {
    *skip = absl::StrCat("no NVRTC: ", cubin.status().ToString());
    return cubin.status();
  }
  if (!cubin.ok()) return cubin.status();
  const std::string cuobjdump = testing::FindCuobjdump(TESSERA_TEST_VENV_DIR);
  if (cuobjdump.empty()) {
    *skip =
        "no cuobjdump (scripts/setup.sh puts PyPI's nvidia-cuda-cuobjdump into build/test-venv)";
    return absl::FailedPreconditionError(*skip);
  }
  testing::ScopedTempDir scratch("default_gmm_image");
  return testing::InspectCubin(*cubin, cuobjdump, scratch.path());
}

// The CUDA module of the default schedule of GMM 4096^3 float16 summed in float32 on `target`,
// what `tessera default ... --json` then `tessera codegen ... --trace` print.
absl::StatusOr<CudaModule> LargeGmmModule(const Target& target) {
  Applied applied = ApplyFirst(NarrowGmm(4096, 4096, 4096, "float16", "float32"), target);
  if (!applied.sch.has_value()) return absl::NotFoundError("no default schedule");
  return GenerateCuda(applied.sch->func(), target);
}

struct Precision {
  std::string dtype, acc;
  std::multiset<std::string> intrins;  // fill, mma, store, load A, load B
  std::string fragment;                // the CUDA type of the input fragments' elements
  std::string hmma;                    // the tensor-core multiply-add of the sm_80 image
};

class TensorCorePrecisionTest : public ::testing::TestWithParam<Precision> {};

TEST_P(TensorCorePrecisionTest, GmmOnSm80IsTensorizedVerifiedAndCompiles) {
  const Precision& p = GetParam();
  const PrimFunc func = NarrowGmm(256, 256, 256, p.dtype, p.acc);
  const Target target = CudaTarget("sm_80");
  Applied applied = ApplyFirst(func, target);
  ASSERT_EQ(applied.rule, "Matmul");
  ASSERT_TRUE(applied.sch.has_value());
  // Each tensorized once: the loops around repeat them.
  EXPECT_EQ(TensorizedIntrins(*applied.sch), p.intrins) << PrintFunc(applied.sch->func());
  absl::Status verified = VerifyGpuCode(applied.sch->func(), target);
  ASSERT_TRUE(verified.ok()) << verified << "\n" << PrintFunc(applied.sch->func());
  absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), target);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_NE(module->source.find("tessera_mma::mma_sync("), std::string::npos);
  EXPECT_NE(module->source.find("tessera_mma::fragment<tessera_mma::matrix_a, " + p.fragment + ">"),
            std::string::npos)
      << module->source;
  EXPECT_EQ(module->source.find("wmma::"), std::string::npos);
  // The k step's tiles in two stages, filled 16 bytes a thread by cp.async ahead of their use.
  EXPECT_NE(module->source.find("tessera_cp_async<16>(&A_shared["), std::string::npos)
      << module->source;
  EXPECT_NE(module->source.find("tessera_cp_async<16>(&B_shared["), std::string::npos);
  EXPECT_NE(module->source.find("tessera_cp_async_wait(0);"), std::string::npos);
  // 2 stages of 64 x 32, rows 40 apart (padded against bank conflicts): 2 x (63 x 40 + 32).
  EXPECT_NE(module->source.find(" A_shared[5104];"), std::string::npos);
  for (const CudaKernel& kernel : module->kernels) EXPECT_EQ(kernel.block[0], 32) << kernel.name;
  std::string skip;
  absl::StatusOr<std::vector<testing::KernelImage>> images =
      CompiledImages(module->source, "sm_80", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(images.ok()) << images.status() << "\n" << module->source;
  ASSERT_EQ(images->size(), 1u);
  const testing::KernelImage& image = images->front();
  EXPECT_EQ(image.local_bytes, 0);
  EXPECT_EQ(image.stack_bytes, 0);
  EXPECT_EQ(image.opcodes.count(p.hmma), 1u) << p.hmma;
  EXPECT_EQ(image.opcodes.count("LDGSTS.E.BYPASS.128"), 1u);
  EXPECT_EQ(image.opcodes.count("LDSM.16.M88.4"), 1u);
  EXPECT_EQ(image.opcodes.count("LDSM.16.MT88.4"), 1u);
}

TEST_P(TensorCorePrecisionTest, TensorizedScheduleComputesWhatTheGmmComputes) {
  const Precision& p = GetParam();
  for (const auto& [m, n, k] :
       {std::make_tuple(32, 32, 32), std::make_tuple(64, 64, 64), std::make_tuple(16, 48, 32)}) {
    SCOPED_TRACE(absl::StrCat(m, "x", n, "x", k));
    const PrimFunc func = NarrowGmm(m, n, k, p.dtype, p.acc);
    Applied applied = ApplyFirst(func, CudaTarget("sm_80"));
    ASSERT_EQ(applied.rule, "Matmul");
    EXPECT_EQ(TensorizedIntrins(*applied.sch), p.intrins);
    absl::Status correct = testing::CheckTensorizedScheduleCorrect(*applied.sch, func);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, TensorCorePrecisionTest,
    ::testing::Values(Precision{"float16",
                                "",
                                {kMmaFillF16, kMmaSyncF16, kMmaStoreF16, kMmaLoadA, kMmaLoadB},
                                "half",
                                "HMMA.16816.F16"},
                      Precision{"float16",
                                "float32",
                                {kMmaFill, kMmaSync, kMmaStore, kMmaLoadA, kMmaLoadB},
                                "half",
                                "HMMA.16816.F32"},
                      Precision{"bfloat16",
                                "float32",
                                {kMmaFill, kMmaSyncBf16, kMmaStore, kMmaLoadABf16, kMmaLoadBBf16},
                                "__nv_bfloat16",
                                "HMMA.16816.F32.BF16"}),
    [](const ::testing::TestParamInfo<Precision>& info) {
      return info.param.dtype + (info.param.acc.empty() ? "" : "_to_" + info.param.acc);
    });

// The GPU checks refuse a tensor-core schedule on an architecture without those tensor cores,
// saying which fragment needs which.
TEST(DefaultScheduleTensorCoreTest, VerificationRejectsFragmentsTheArchitectureLacks) {
  Applied bf16 = ApplyFirst(NarrowGmm(64, 64, 64, "bfloat16", "float32"), CudaTarget("sm_80"));
  ASSERT_TRUE(bf16.sch.has_value());
  ASSERT_FALSE(TensorizedIntrins(*bf16.sch).empty());
  absl::Status on_turing = VerifyGpuCode(bf16.sch->func(), CudaTarget("sm_75"));
  EXPECT_EQ(on_turing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(on_turing.message().find("tensor-core fragment"), std::string::npos) << on_turing;
  EXPECT_NE(on_turing.message().find("(mma."), std::string::npos) << on_turing;
  EXPECT_NE(on_turing.message().find("needs sm_80 or later; the target is cuda -arch=sm_75"),
            std::string::npos)
      << on_turing;
  Applied f16 = ApplyFirst(NarrowGmm(64, 64, 64, "float16", "float32"), CudaTarget("sm_75"));
  ASSERT_TRUE(f16.sch.has_value());
  EXPECT_TRUE(VerifyGpuCode(f16.sch->func(), CudaTarget("sm_75")).ok());
  absl::Status on_pascal = VerifyGpuCode(f16.sch->func(), CudaTarget("sm_61"));
  EXPECT_NE(on_pascal.message().find("needs sm_70 or later"), std::string::npos) << on_pascal;
}

// What `tessera codegen` of the default float16 GMM 4096^3 summed in float32 shows for sm_80: the
// products are mma.sync.m16n8k16 on fragments loaded by ldmatrix, from A and B tiles that cp.async
// fills in two shared stages, whose rows are padded (A's 40, B's 72 elements apart).
TEST(DefaultScheduleTensorCoreTest, LargeGmmOnSm80IsMmaSyncOnLdmatrixFromTwoCpAsyncStages) {
  absl::StatusOr<CudaModule> module = LargeGmmModule(CudaTarget("sm_80"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string& src = module->source;
  for (const char* text :
       {"mma.sync.aligned.m16n8k16.row.col.f32.", "ldmatrix.sync.aligned.m8n8.x4",
        "ldmatrix.sync.aligned.m8n8.x4.trans", "tessera_mma::load_matrix_sync(",
        "tessera_mma::mma_sync(", "tessera_cp_async<16>(&A_shared[", "tessera_cp_async_commit();",
        "tessera_cp_async_wait(0);", " A_shared[5104];", "% 2) * 2552)]", "], 40);", "], 72);"}) {
    EXPECT_NE(src.find(text), std::string::npos) << text;
  }
}

// float32 multiplied at TF32 (`--acc tf32`) on sm_80: mma.sync.m16n8k8.tf32 on operands rounded
// as they are loaded, from two cp.async stages of 16-wide k steps; the interpreter checks it at
// small shapes. Before sm_80 the same workload takes the SIMT path (round_tf32 in the code).
TEST(DefaultScheduleTensorCoreTest, Tf32GmmIsMmaSyncM16n8k8FromTwoCpAsyncStages) {
  const Target target = CudaTarget("sm_80");
  for (int64_t n : {32, 64}) {
    const PrimFunc small = NarrowGmm(n, n, n, "float32", "tf32");
    Applied applied = ApplyFirst(small, target);
    ASSERT_TRUE(applied.sch.has_value());
    EXPECT_EQ(TensorizedIntrins(*applied.sch),
              (std::multiset<std::string>{kMmaFill, kMmaSyncTf32, kMmaStore, kMmaLoadATf32,
                                          kMmaLoadBTf32}));
    absl::Status correct = testing::CheckTensorizedScheduleCorrect(*applied.sch, small);
    EXPECT_TRUE(correct.ok()) << correct;
  }
  Applied applied = ApplyFirst(NarrowGmm(256, 256, 256, "float32", "tf32"), target);
  ASSERT_TRUE(applied.sch.has_value());
  absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), target);
  ASSERT_TRUE(module.ok()) << module.status();
  for (const char* text : {"tessera_mma::fragment<tessera_mma::matrix_a, float>",
                           "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                           "tessera_cp_async<16>(&A_shared[", " A_shared[2552];"}) {
    EXPECT_NE(module->source.find(text), std::string::npos) << text;
  }
  std::string skip;
  absl::StatusOr<std::vector<testing::KernelImage>> images =
      CompiledImages(module->source, "sm_80", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(images.ok()) << images.status() << "\n" << module->source;
  ASSERT_EQ(images->size(), 1u);
  EXPECT_EQ(images->front().opcodes.count("HMMA.1688.F32.TF32"), 1u);
  EXPECT_EQ(images->front().opcodes.count("LDGSTS.E.BYPASS.128"), 1u);
  EXPECT_EQ(images->front().local_bytes, 0);
}

TEST(DefaultScheduleTensorCoreTest, Tf32BeforeSm80AndPlainFloat32TakeTheSimtPath) {
  for (const auto& [acc, arch] : {std::pair{"tf32", "sm_75"}, std::pair{"", "sm_80"}}) {
    const PrimFunc func = NarrowGmm(64, 64, 64, "float32", acc);
    Applied applied = ApplyFirst(func, CudaTarget(arch));
    ASSERT_TRUE(applied.sch.has_value());
    EXPECT_TRUE(TensorizedIntrins(*applied.sch).empty()) << arch;
    absl::Status correct = testing::CheckScheduleCorrect(*applied.sch, func);
    EXPECT_TRUE(correct.ok()) << correct;
    absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), CudaTarget(arch));
    ASSERT_TRUE(module.ok()) << module.status();
    EXPECT_EQ(module->source.find("tessera_round_tf32(", module->source.find("extern \"C\"")) !=
                  std::string::npos,
              std::string(acc) == "tf32");
  }
}

// WMMA's fragments before sm_80, which has no mma.sync.m16n8k16.
TEST(DefaultScheduleTensorCoreTest, Sm75TakesWmmaFragments) {
  Applied applied = ApplyFirst(NarrowGmm(64, 64, 64, "float16", "float32"), CudaTarget("sm_75"));
  ASSERT_TRUE(applied.sch.has_value());
  EXPECT_EQ(TensorizedIntrins(*applied.sch),
            (std::multiset<std::string>{kWmmaFill, kWmmaSync, kWmmaStore, kWmmaLoadA, kWmmaLoadB}));
  absl::Status correct = testing::CheckTensorizedScheduleCorrect(
      *applied.sch, NarrowGmm(64, 64, 64, "float16", "float32"));
  EXPECT_TRUE(correct.ok()) << correct;
}

// Before sm_80 there is no cp.async: the default fills its one stage in place.
TEST(DefaultScheduleTensorCoreTest, BeforeSm80TheTilesAreNotPipelined) {
  Applied applied = ApplyFirst(NarrowGmm(256, 256, 256, "float16", "float32"), CudaTarget("sm_75"));
  ASSERT_TRUE(applied.sch.has_value());
  ASSERT_FALSE(TensorizedIntrins(*applied.sch).empty());
  absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), CudaTarget("sm_75"));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->source.find("tessera_cp_async<"), std::string::npos);
  EXPECT_NE(module->source.find(" A_shared[2552];"), std::string::npos) << module->source;
}

TEST(DefaultScheduleTensorCoreTest, OtherArchitecturesDtypesAndShapesTakeTheSimtPath) {
  struct Case {
    PrimFunc func;
    std::string arch;
  };
  // bfloat16 tensor cores start at sm_80.
  for (const Case& c : {Case{HalfGmm(64, 64, 64), "sm_61"}, Case{HalfGmm(24, 32, 32), "sm_80"},
                        Case{testing::SmallWorkload("GMM"), "sm_80"},
                        Case{NarrowGmm(64, 64, 64, "bfloat16", "float32"), "sm_75"},
                        Case{NarrowGmm(64, 64, 64, "bfloat16", ""), "sm_80"}}) {
    Applied applied = ApplyFirst(c.func, CudaTarget(c.arch));
    ASSERT_EQ(applied.rule, "Matmul") << c.arch;
    EXPECT_TRUE(TensorizedIntrins(*applied.sch).empty()) << c.arch;
    absl::Status correct = testing::CheckScheduleCorrect(*applied.sch, c.func);
    EXPECT_TRUE(correct.ok()) << correct;
  }
}

// ---- Hopper (sm_90a) -------------------------------------------------------------------

// sm_90a with the 227 KiB of shared memory every Hopper part lets a block opt in to.
Target Sm90a() { return *Target::Parse("cuda -arch=sm_90a"); }

// The default float16 / bfloat16 GMMs summed in float32 on sm_90a are wgmma products of
// 64 x N x 16 from TMA tiles: the interpreter runs them (the intrinsics' descriptions: TMA
// copies are the tiles' copies, wgmma the 64 x N x 16 product) against the unscheduled GMM, at
// shapes that take each tile of the default (two warpgroups x 128, one x 128, one x 64) and a
// batch of 2.
TEST(DefaultScheduleHopperTest, WgmmaScheduleComputesWhatTheGmmComputes) {
  for (const std::string dtype : {"float16", "bfloat16"}) {
    for (const auto& [b, m, n, k, columns] :
         {std::make_tuple(1, 128, 256, 128, 128), std::make_tuple(1, 64, 128, 64, 128),
          std::make_tuple(1, 64, 64, 192, 64), std::make_tuple(2, 128, 128, 64, 128)}) {
      SCOPED_TRACE(absl::StrCat(dtype, " ", b, "x", m, "x", n, "x", k));
      const PrimFunc func =
          *MakeWorkload("GMM", {{"B", b}, {"M", m}, {"N", n}, {"K", k}}, dtype, "float32");
      Applied applied = ApplyFirst(func, Sm90a());
      ASSERT_EQ(applied.rule, "Matmul");
      const WgmmaIntrins* intrins =
          FindWgmmaIntrins(dtype == "float16" ? DataType::Float16() : DataType::BFloat16(),
                           DataType::Float32(), columns);
      ASSERT_NE(intrins, nullptr);
      EXPECT_EQ(TensorizedIntrins(*applied.sch),
                (std::multiset<std::string>{intrins->fill, intrins->sync, intrins->store}));
      absl::Status correct = testing::CheckTensorizedScheduleCorrect(*applied.sch, func);
      EXPECT_TRUE(correct.ok()) << correct;
      absl::Status verified = VerifyGpuCode(applied.sch->func(), Sm90a());
      EXPECT_TRUE(verified.ok()) << verified;
    }
  }
}

// What `tessera codegen` of the default float16 GMM 4096^3 summed in float32 shows for sm_90a:
// wgmma.mma_async.m64n128k16 from descriptors of 128-byte-swizzled tiles that
// cp.async.bulk.tensor fills through four mbarrier stages; the launch manifest carries the two
// tensor maps (A's 64 x 128 box, B's 64 x 64, innermost first). The image holds HGMMA, UTMALDG
// and SYNCS (the mbarriers), nothing spilled, its shared memory within the target's 227 KiB.
TEST(DefaultScheduleHopperTest, LargeGmmOnSm90aIsWgmmaFromTmaStagesWithMbarriers) {
  absl::StatusOr<CudaModule> module = LargeGmmModule(Sm90a());
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string& src = module->source;
  for (const char* text :
       {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "wgmma.fence.sync.aligned;",
        "wgmma.commit_group.sync.aligned;", "cp.async.bulk.tensor.3d.shared::cluster.global",
        "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.expect_tx",
        "tessera_mbarrier_init(&k_0_full[3], 1);", "tessera_mbarrier_wait(&k_0_full[k_0 % 4]",
        "const __grid_constant__ tessera_tensor_map tessera_map1",
        "tessera_mbarrier_expect_tx(&k_0_full[(k_0 + 3) % 4], 32768);"}) {
    EXPECT_NE(src.find(text), std::string::npos) << text;
  }
  ASSERT_EQ(module->kernels.size(), 1u);
  const CudaKernel& kernel = module->kernels[0];
  EXPECT_EQ(kernel.block[0], 128);
  EXPECT_EQ(kernel.block[1], 2);
  EXPECT_EQ(kernel.grid[0], 32);
  ASSERT_EQ(kernel.tensor_maps.size(), 2u);
  EXPECT_EQ(kernel.tensor_maps[0], (CudaTensorMap{0, "float16", {4096, 4096, 1}, {64, 128, 1}}));
  EXPECT_EQ(kernel.tensor_maps[1], (CudaTensorMap{1, "float16", {4096, 4096, 1}, {64, 64, 1}}));
  // C's 128 x 128 floats, the mbarriers, 4 stages of A and B (16 KiB each), 1 KiB of slack.
  EXPECT_EQ(kernel.dynamic_shared_bytes, 65536 + 1024 + 4 * 32768 + 1024);
  std::string skip;
  absl::StatusOr<std::vector<testing::KernelImage>> images = CompiledImages(src, "sm_90a", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(images.ok()) << images.status() << "\n" << src;
  // wgmma exists on sm_90a only: the same source does not compile for sm_90.
  EXPECT_FALSE(CompileCudaSource(src, "sm_90").ok());
  ASSERT_EQ(images->size(), 1u);
  const testing::KernelImage& image = images->front();
  for (const char* opcode : {"HGMMA.64x128x16.F32", "UTMALDG.3D", "SYNCS.ARRIVE.TRANS64",
                             "SYNCS.PHASECHK.TRANS64.TRYWAIT", "SYNCS.EXCH.64"}) {
    EXPECT_EQ(image.opcodes.count(opcode), 1u) << opcode;
  }
  EXPECT_EQ(image.opcodes.count("HMMA.16816.F32"), 0u);
  EXPECT_EQ(image.local_bytes, 0);
  EXPECT_EQ(image.stack_bytes, 0);
}

// Columns that are no multiple of 64 (a classifier's 1000 is 5 x 200): the default takes the widest
// multiple of 8 that divides them, wgmma.mma_async.m64n200k16, whose B tiles are stored in whole
// 128-byte blocks (200 columns in 4 blocks of 64, the last one filled in part by its copy).
TEST(DefaultScheduleHopperTest, ColumnsBetweenTheBlocksAreWgmmaOfThatWidth) {
  const PrimFunc func = NarrowGmm(64, 200, 128, "float16", "float32");
  Applied applied = ApplyFirst(func, Sm90a());
  ASSERT_TRUE(applied.sch.has_value());
  const WgmmaIntrins* intrins = FindWgmmaIntrins(DataType::Float16(), DataType::Float32(), 200);
  ASSERT_NE(intrins, nullptr);
  EXPECT_EQ(TensorizedIntrins(*applied.sch),
            (std::multiset<std::string>{intrins->fill, intrins->sync, intrins->store}));
  absl::Status correct = testing::CheckTensorizedScheduleCorrect(*applied.sch, func);
  EXPECT_TRUE(correct.ok()) << correct;
  absl::StatusOr<CudaModule> module = GenerateCuda(applied.sch->func(), Sm90a());
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_NE(module->source.find("wgmma.mma_async.sync.aligned.m64n200k16.f32.f16.f16"),
            std::string::npos);
  // Four copies of B's 64-column blocks a stage: 4 x 64 x 64 halves, and A's 64 x 64.
  EXPECT_NE(module->source.find("tessera_mbarrier_expect_tx(&k_0_full[0], 40960);"),
            std::string::npos)
      << module->source;
  std::string skip;
  absl::StatusOr<std::vector<testing::KernelImage>> images =
      CompiledImages(module->source, "sm_90a", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(images.ok()) << images.status() << "\n" << module->source;
  EXPECT_EQ(images->front().opcodes.count("HGMMA.64x200x16.F32"), 1u);
  EXPECT_EQ(images->front().local_bytes, 0);
}

// wgmma exists only on sm_90a (later architectures lack it): verification rejects the Hopper
// schedule elsewhere, naming the accumulator; sm_90 without the suffix, and sm_90a with the
// conservative 48 KiB, take the mma.sync path.
TEST(DefaultScheduleHopperTest, OnlySm90aTakesWgmma) {
  const PrimFunc func = NarrowGmm(128, 128, 128, "float16", "float32");
  Applied hopper = ApplyFirst(func, Sm90a());
  ASSERT_TRUE(hopper.sch.has_value());
  for (const char* other : {"cuda -arch=sm_90", "cuda -arch=sm_100a", "cuda -arch=sm_80"}) {
    absl::Status verified = VerifyGpuCode(hopper.sch->func(), *Target::Parse(other));
    EXPECT_EQ(verified.code(), absl::StatusCode::kInvalidArgument) << other;
    EXPECT_NE(verified.message().find("(wgmma.accumulator) needs wgmma, which only sm_90a has"),
              std::string::npos)
        << verified;
  }
  for (const Target& target : {*Target::Parse("cuda -arch=sm_90"), CudaTarget("sm_90a")}) {
    Applied applied = ApplyFirst(func, target);
    ASSERT_TRUE(applied.sch.has_value());
    EXPECT_EQ(TensorizedIntrins(*applied.sch).count(kMmaSync), 1u) << target.ToString();
  }
}

// TMA tiles complete through the software pipeline's mbarriers: without the annotation the
// copies have none, and code generation says so.
TEST(DefaultScheduleHopperTest, TmaTilesNeedAPipelinedLoop) {
  Applied applied = ApplyFirst(NarrowGmm(128, 128, 128, "float16", "float32"), Sm90a());
  ASSERT_TRUE(applied.sch.has_value());
  Schedule& sch = *applied.sch;
  for (const Instruction& inst : std::vector<Instruction>(sch.trace().insts())) {
    if (std::string(inst.kind->name) != "Annotate") continue;
    ASSERT_TRUE(sch.Unannotate(LoopRV{inst.inputs[0].rv_id()}, kSoftwarePipelineStages).ok());
  }
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Sm90a());
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find(
                "has no mbarrier: TMA tiles must be filled in a software-pipelined loop"),
            std::string::npos)
      << module.status();
}

// Only TMA writes and only wgmma reads a TMA tile: a SIMT schedule whose shared A tile is put
// in that scope is refused, naming the tile.
TEST(DefaultScheduleHopperTest, TmaTilesAreForTmaAndWgmmaOnly) {
  Applied applied = ApplyFirst(NarrowGmm(128, 128, 128, "float16", "float16"), CudaTarget("sm_75"));
  ASSERT_TRUE(applied.sch.has_value());
  Schedule& sch = *applied.sch;
  absl::StatusOr<BlockRV> a_shared = sch.GetBlock("A_shared");
  ASSERT_TRUE(a_shared.ok()) << PrintFunc(sch.func());
  ASSERT_TRUE(sch.SetScope(*a_shared, 0, kTmaSharedScope).ok());
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Sm90a());
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("the TMA copy into A_shared must store tile[.., r, c] "
                                           "over loops of the tile's extents"),
            std::string::npos)
      << module.status();
}

// C2D of batch 1 in NHWC.
std::map<std::string, int64_t> Conv(int64_t h, int64_t w, int64_t ci, int64_t co, int64_t k,
                                    int64_t stride, int64_t padding) {
  return {{"N", 1},   {"H", h}, {"W", w},           {"CI", ci},
          {"CO", co}, {"K", k}, {"stride", stride}, {"padding", padding}};
}

// Schedules the convolution of `shape` for sm_80, expecting the Matmul rule, a schedule the
// verifier accepts, and what the convolution computes (interpreted); its printed IR.
std::string ExpectConvolutionIsAGemm(const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("C2D", shape);
  EXPECT_TRUE(func.ok()) << func.status();
  if (!func.ok()) return "";
  Applied applied = ApplyFirst(*func, CudaTarget("sm_80"));
  EXPECT_EQ(applied.rule, "Matmul");
  if (applied.rule != "Matmul") return "";
  absl::Status verified = VerifyGpuCode(applied.sch->func(), CudaTarget("sm_80"));
  EXPECT_TRUE(verified.ok()) << verified;
  absl::Status correct = testing::CheckScheduleCorrect(*applied.sch, *func);
  EXPECT_TRUE(correct.ok()) << correct;
  return PrintFunc(applied.sch->func());
}

// A convolution is a GEMM over (H, W) x CO x (RH, RW, CI) once its windowed input is reindexed;
// the im2col copy is inlined into the shared tile, so no column matrix is stored: the tiles of
// 8 x 16 threads compute what the convolution computes (16 x 16 x 16 -> 64 with a 3 x 3 window
// and zero padding; a 1 x 1 stride-2 projection).
TEST(DefaultScheduleMatmulTest, ConvolutionsAreGemmsOverAnIm2colTileInSharedMemory) {
  for (const auto& shape : {Conv(16, 16, 16, 64, 3, 1, 1), Conv(16, 16, 32, 64, 1, 2, 0)}) {
    SCOPED_TRACE(shape.at("K"));
    const std::string ir = ExpectConvolutionIsAGemm(shape);
    EXPECT_NE(ir.find("_reindex_shared"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("_reindex = alloc_buffer"), std::string::npos) << ir;
  }
}

// Tiles that cross the image's rows (32 pixels over rows of 12) or the window (the stem's K
// steps of 16 over its 7 x 7 x 3 taps, K = 147 with a partial last step) still have a bounded
// shared tile: a few whole rows (the region analysis bounds floordiv(32 t + 31, 12) -
// floordiv(32 t, 12) by 3, ir/arith/analyzer.h). They are GEMMs too, and compute the convolution.
TEST(DefaultScheduleMatmulTest, ConvolutionsWhoseTilesCrossRowsOrTheWindowAreGemms) {
  for (const auto& shape : {Conv(12, 12, 16, 64, 3, 1, 1), Conv(16, 16, 3, 64, 7, 2, 3)}) {
    SCOPED_TRACE(shape.at("K"));
    ExpectConvolutionIsAGemm(shape);
  }
}

}  // namespace
}  // namespace tessera
