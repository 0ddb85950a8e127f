// GenerateCuda and LowerForGpu: hand-written GPU schedules produce CUDA that NVRTC compiles for
// sm_80 and sm_90 (no GPU needed), the schedules still compute what the unscheduled functions
// compute (interpreter: thread-bound loops run serially), and the emitted code has the expected
// shape: compacted shared tiles, barriers between producing and consuming shared memory, vector
// accesses, cross-thread reductions, unrolled virtual threads, one kernel per loop nest.
#include "codegen/codegen_cuda.h"

#include <string>
#include <vector>

#include "codegen/lower_gpu.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "schedule/tensor_intrin.h"
#include "tests/codegen/gpu_schedules.h"
#include "tests/codegen/nvrtc_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using gpu_testing::GmmTiling;
using gpu_testing::Loops;
using gpu_testing::Ok;
using nvrtc_testing::CompileWithNvrtc;

Target Cuda(const std::string& extra = "") {
  absl::StatusOr<Target> t = Target::Parse("cuda -arch=sm_90 " + extra);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Generates CUDA for `func` and compiles it for sm_80 and sm_90.
CudaModule GenerateAndCompile(const PrimFunc& func) {
  absl::StatusOr<CudaModule> module = GenerateCuda(func, Cuda());
  EXPECT_TRUE(module.ok()) << module.status() << "\n" << PrintFunc(func);
  if (!module.ok()) return CudaModule();
  // Without TESSERA_WITH_CUDA there is no NVRTC: only the source is checked.
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::Status compiled = CompileWithNvrtc(module->source, arch);
    EXPECT_TRUE(compiled.ok()) << arch << ": " << compiled << "\n" << module->source;
  }
  return *module;
}

void ExpectSameOutputs(const PrimFunc& reference, const Schedule& sch) {
  absl::Status same = testing::CheckSameOutputs(reference, sch.func());
  EXPECT_TRUE(same.ok()) << same << "\n" << PrintFunc(sch.func());
}

// The kernels of a translation unit (without the prelude).
std::string Kernels(const std::string& source) {
  size_t start = source.find("extern \"C\"");
  return start == std::string::npos ? "" : source.substr(start);
}

// Position of `part` in `s` at or after `from` (npos if absent).
size_t Find(const std::string& s, const std::string& part, size_t from = 0) {
  return s.find(part, from);
}

// ---- GMM with shared and local caches -------------------------------------------------------

TEST(CodegenCudaTest, TiledGmmCompilesWithNvrtc) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  const CudaKernel& k = module.kernels[0];
  EXPECT_EQ(k.name, "main_kernel0");
  EXPECT_EQ(k.grid[0], 4);
  EXPECT_EQ(k.grid[1], 4);
  EXPECT_EQ(k.grid[2], 1);
  EXPECT_EQ(k.block[0], 16);
  EXPECT_EQ(k.block[1], 16);
  EXPECT_EQ(k.block[2], 1);
  EXPECT_EQ(k.param_indices, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(Contains(module.source, "__launch_bounds__(256) main_kernel0(")) << module.source;
}

TEST(CodegenCudaTest, TiledGmmCompactsSharedAndLocalBuffers) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Cuda());
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string& src = module->source;
  // One k-tile of the block's rows of A (64 x 16) and columns of B (16 x 64), not the matrices.
  EXPECT_TRUE(Contains(src, "__shared__ __align__(32) float A_shared[1024];")) << src;
  EXPECT_TRUE(Contains(src, "__shared__ __align__(32) float B_shared[1024];")) << src;
  // One thread's 4 x 4 accumulators.
  EXPECT_TRUE(Contains(src, "float C_local[16];")) << src;
}

// Static __shared__ arrays may total 48 KiB at most ("ptxas error: Entry function uses too much
// shared data"): 128 x 64 tiles of A and B (64 KiB) are carved from dynamic shared memory, which
// the launch asks for; the 4 KiB tiles above stay static arrays.
TEST(CodegenCudaTest, SharedTilesAbove48KiBLiveInDynamicSharedMemory) {
  GmmTiling big;
  big.per_thread = 8;
  big.k_tile = 64;
  Schedule sch = gpu_testing::ScheduleGmm(big);
  absl::StatusOr<CudaModule> module =
      GenerateCuda(sch.func(), Cuda("-max_shared_memory_per_block=232448"));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_EQ(module->kernels.size(), 1u);
  EXPECT_EQ(module->kernels[0].dynamic_shared_bytes, 2 * 128 * 64 * 4);
  const std::string& src = module->source;
  EXPECT_TRUE(Contains(src, "extern __shared__ __align__(128) unsigned char tessera_shared[];"))
      << src;
  // In allocation order (B's buffer is allocated around A's).
  EXPECT_TRUE(
      Contains(src, "float* const B_shared = reinterpret_cast<float*>(tessera_shared + 0);"))
      << src;
  EXPECT_TRUE(
      Contains(src, "float* const A_shared = reinterpret_cast<float*>(tessera_shared + 32768);"))
      << src;
  EXPECT_FALSE(Contains(src, "__shared__ __align__(32) float")) << src;
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::Status compiled = CompileWithNvrtc(src, arch);
    EXPECT_TRUE(compiled.ok()) << arch << ": " << compiled;
  }
  absl::StatusOr<CudaModule> small = GenerateCuda(gpu_testing::ScheduleGmm({}).func(), Cuda());
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->kernels[0].dynamic_shared_bytes, 0);
}

TEST(CodegenCudaTest, TiledGmmSynchronizesAroundSharedTiles) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Cuda());
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string src = Kernels(module->source);
  size_t k_loop = Find(src, "for (long long k_0 = 0;");
  ASSERT_NE(k_loop, std::string::npos) << src;
  // WAR: the next k-tile's copy waits for this tile's readers.
  size_t war = Find(src, "__syncthreads();", k_loop);
  size_t a_copy = Find(src, "A_shared[", k_loop);
  ASSERT_NE(war, std::string::npos) << src;
  EXPECT_LT(war, a_copy) << src;
  // RAW: the compute waits for the copies.
  size_t b_copy = Find(src, "B_shared[", a_copy);
  size_t raw = Find(src, "__syncthreads();", b_copy);
  size_t use = Find(src, "C_local[", b_copy);
  ASSERT_NE(raw, std::string::npos) << src;
  EXPECT_LT(raw, use) << src;
  EXPECT_EQ(Find(src, "__syncthreads();", raw + 1), std::string::npos)
      << "exactly two barriers expected:\n" << src;
}

TEST(CodegenCudaTest, TiledGmmVectorizesContiguousCopy) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Cuda());
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(Contains(module->source, "float4 vec_0 = *(const float4*)(&A[")) << module->source;
  EXPECT_TRUE(Contains(module->source, "*(float4*)(&A_shared[")) << module->source;
  EXPECT_TRUE(Contains(module->source, "*(const float4*)(&B[")) << module->source;
  EXPECT_TRUE(Contains(module->source, "*(float4*)(&B_shared[")) << module->source;
}

TEST(CodegenCudaTest, TiledGmmMatchesInterpreter) {
  GmmTiling t;
  t.n = 64;
  t.threads = 8;
  Schedule sch = gpu_testing::ScheduleGmm(t);
  ExpectSameOutputs(*MakeWorkload("GMM", {{"B", 1}, {"M", 64}, {"N", 64}, {"K", 64}}), sch);
  GenerateAndCompile(sch.func());
}

TEST(CodegenCudaTest, Float16GmmCompilesWithNvrtc) {
  GmmTiling t;
  t.dtype = "float16";
  t.copy_lanes = 2;
  Schedule sch = gpu_testing::ScheduleGmm(t);
  CudaModule module = GenerateAndCompile(sch.func());
  EXPECT_TRUE(Contains(module.source, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(Contains(module.source, "half* __restrict__ A")) << module.source;
  EXPECT_TRUE(Contains(module.source, "__float2half_rn(")) << module.source;
  EXPECT_TRUE(Contains(module.source, "__shared__ __align__(32) half A_shared[1024];"))
      << module.source;
  EXPECT_TRUE(Contains(module.source, "*(const half2*)(&A[")) << module.source;
}

TEST(CodegenCudaTest, Float16GmmMatchesInterpreter) {
  GmmTiling t;
  t.n = 32;
  t.threads = 4;
  t.k_tile = 8;
  t.copy_lanes = 2;
  t.dtype = "float16";
  Schedule sch = gpu_testing::ScheduleGmm(t);
  ExpectSameOutputs(*MakeWorkload("GMM", {{"B", 1}, {"M", 32}, {"N", 32}, {"K", 32}}, "float16"),
                    sch);
}

// ---- Elementwise ----------------------------------------------------------------------------

TEST(CodegenCudaTest, BoundFusedElementwiseCompiles) {
  Schedule sch = gpu_testing::ScheduleElementwise(1024, 1024, 256, 1);
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  EXPECT_EQ(module.kernels[0].grid[0], 4096);
  EXPECT_EQ(module.kernels[0].block[0], 256);
  EXPECT_TRUE(Contains(module.source, "= blockIdx.x;")) << module.source;
  EXPECT_TRUE(Contains(module.source, "= threadIdx.x;")) << module.source;
  EXPECT_FALSE(Contains(Kernels(module.source), "__syncthreads();")) << module.source;
}

TEST(CodegenCudaTest, VectorizedElementwiseUsesFloat4) {
  Schedule sch = gpu_testing::ScheduleElementwise(64, 64, 32, 4);
  ExpectSameOutputs(*MakeWorkload("ELEMENTWISE", {{"M", 64}, {"N", 64}}), sch);
  CudaModule module = GenerateAndCompile(sch.func());
  EXPECT_TRUE(Contains(module.source, "*(const float4*)(&A[")) << module.source;
  EXPECT_TRUE(Contains(module.source, "*(const float4*)(&B[")) << module.source;
  EXPECT_TRUE(Contains(module.source, "*(float4*)(&C[")) << module.source;
  EXPECT_TRUE(Contains(module.source, ".w = ")) << module.source;
}

TEST(CodegenCudaTest, UnalignedVectorLoopFallsBackToUnrolledLoop) {
  // 3 columns per thread: lane bases are not multiples of the vector width.
  Schedule sch = gpu_testing::ScheduleElementwise(8, 6, 4, 3);
  CudaModule module = GenerateAndCompile(sch.func());
  EXPECT_FALSE(Contains(module.source, "float4")) << module.source;
  EXPECT_TRUE(Contains(module.source, "#pragma unroll")) << module.source;
}

// ---- Cross-thread reduction ------------------------------------------------------------------

TEST(CodegenCudaTest, CrossThreadReductionUsesWarpShuffles) {
  Schedule sch = gpu_testing::ScheduleReduceSum(1024, 1024, 128);
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  EXPECT_EQ(module.kernels[0].block[0], 128);
  EXPECT_EQ(module.kernels[0].grid[0], 1024);
  const std::string& src = module.source;
  EXPECT_TRUE(Contains(src, "tessera_block_reduce_sum(")) << src;
  EXPECT_TRUE(Contains(src, "__shfl_down_sync")) << src;
  EXPECT_TRUE(Contains(src, "__shared__ __align__(32) float A_red_red_scratch[32];")) << src;
  // Only threadIdx.x == 0 writes the row's result.
  EXPECT_TRUE(Contains(src, "if (k_1 == 0) {")) << src;
}

TEST(CodegenCudaTest, CrossThreadReductionMatchesInterpreter) {
  Schedule sch = gpu_testing::ScheduleReduceSum(16, 256, 64);
  ExpectSameOutputs(*MakeWorkload("REDUCE_SUM", {{"M", 16}, {"N", 256}}), sch);
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(sch.func(), Cuda());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  GenerateAndCompile(sch.func());
}

TEST(CodegenCudaTest, SubWarpCrossThreadReductionWithSeveralRowsPerBlock) {
  Schedule sch = gpu_testing::ScheduleReduceSum(64, 64, 16, /*rows_per_block=*/4);
  ExpectSameOutputs(*MakeWorkload("REDUCE_SUM", {{"M", 64}, {"N", 64}}), sch);
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  EXPECT_EQ(module.kernels[0].block[0], 16);
  EXPECT_EQ(module.kernels[0].block[1], 4);
  EXPECT_TRUE(Contains(module.source, ", 16);")) << module.source;
}

TEST(CodegenCudaTest, CrossThreadReductionRejectsOddThreadCount) {
  Schedule sch = gpu_testing::ScheduleReduceSum(8, 48, 48);
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Cuda());
  ASSERT_FALSE(module.ok());
  EXPECT_TRUE(Contains(std::string(module.status().message()),
                       "threadIdx.x extent 48 is neither a power of two up to 32 nor a multiple "
                       "of 32"))
      << module.status();
}

// ---- Virtual threads -------------------------------------------------------------------------

TEST(CodegenCudaTest, VirtualThreadsBecomeUnrolledLoops) {
  Schedule sch = gpu_testing::ScheduleVthread(64, 2);
  ExpectSameOutputs(*MakeWorkload("ELEMENTWISE", {{"M", 64}, {"N", 64}}), sch);
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  EXPECT_EQ(module.kernels[0].block[0], 32);
  EXPECT_EQ(module.kernels[0].block[1], 8);
  EXPECT_EQ(module.kernels[0].grid[1], 4);
  EXPECT_TRUE(Contains(module.source, "#pragma unroll\n")) << module.source;
  EXPECT_TRUE(Contains(module.source, "< 2; ++")) << module.source;
  EXPECT_FALSE(Contains(module.source, "vthread")) << module.source;
}

// ---- Several kernels, dtypes, errors ----------------------------------------------------------

// Two outputs computed by two loop nests: B = A * 2 and C = A + 1.
PrimFunc TwoOutputs(DataType dtype) {
  Tensor a = Placeholder({64, 64}, dtype, "A");
  Tensor b = Compute({64, 64}, [&](const std::vector<Var>& i) { return a({i[0], i[1]}) * Expr(2); },
                     "B");
  Tensor c = Compute({64, 64}, [&](const std::vector<Var>& i) { return a({i[0], i[1]}) + Expr(1); },
                     "C");
  return *CreatePrimFunc("main", {a, b, c});
}

Schedule BindRowsAndColumns(const PrimFunc& func, const std::vector<std::string>& blocks) {
  Schedule sch = Schedule::Create(func, 0);
  for (const std::string& name : blocks) {
    std::vector<LoopRV> l = Loops(sch.GetLoops(*sch.GetBlock(name)));
    Ok(sch.Bind(l[0], "blockIdx.x"));
    Ok(sch.Bind(l[1], "threadIdx.x"));
  }
  return sch;
}

TEST(CodegenCudaTest, EachBoundLoopNestBecomesAKernel) {
  PrimFunc func = TwoOutputs(DataType::Float32());
  Schedule sch = BindRowsAndColumns(func, {"B", "C"});
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 2u);
  EXPECT_EQ(module.kernels[0].name, "main_kernel0");
  EXPECT_EQ(module.kernels[1].name, "main_kernel1");
  EXPECT_EQ(module.kernels[0].param_indices, (std::vector<int>{0, 1}));
  EXPECT_EQ(module.kernels[1].param_indices, (std::vector<int>{0, 2}));
  EXPECT_TRUE(Contains(module.source, "main_kernel1(float* __restrict__ A, float* __restrict__ C)"))
      << module.source;
}

TEST(CodegenCudaTest, Bfloat16AndInt8Compile) {
  for (DataType t : {DataType::BFloat16(), DataType::Int8()}) {
    Schedule sch = BindRowsAndColumns(TwoOutputs(t), {"B", "C"});
    CudaModule module = GenerateAndCompile(sch.func());
    EXPECT_EQ(module.kernels.size(), 2u) << t.ToString();
    if (t == DataType::BFloat16()) {
      EXPECT_TRUE(Contains(module.source, "__nv_bfloat16* __restrict__ A")) << module.source;
      EXPECT_TRUE(Contains(module.source, "__float2bfloat16_rn(")) << module.source;
    } else {
      EXPECT_TRUE(Contains(module.source, "signed char* __restrict__ A")) << module.source;
    }
  }
}

TEST(CodegenCudaTest, RejectsParallelLoop) {
  Schedule sch = Schedule::Create(*MakeWorkload("ELEMENTWISE", {{"M", 8}, {"N", 8}}), 0);
  std::vector<LoopRV> l = Loops(sch.GetLoops(*sch.GetBlock("C")));
  Ok(sch.Bind(l[0], "blockIdx.x"));
  Ok(sch.Parallel(l[1]));
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Cuda());
  ASSERT_FALSE(module.ok());
  EXPECT_TRUE(Contains(std::string(module.status().message()),
                       "cuda codegen: loop j is parallel"))
      << module.status();
}

TEST(CodegenCudaTest, RejectsGlobalIntermediate) {
  Tensor a = Placeholder({16}, DataType::Float32(), "A");
  Tensor t = Compute({16}, [&](const std::vector<Var>& i) { return a({i[0]}) * Expr(2); }, "T");
  Tensor b = Compute({16}, [&](const std::vector<Var>& i) { return t({i[0]}) + Expr(1); }, "B");
  Schedule sch = Schedule::Create(*CreatePrimFunc("main", {a, b}), 0);
  for (const char* name : {"T", "B"}) {
    std::vector<LoopRV> l = Loops(sch.GetLoops(*sch.GetBlock(name)));
    Ok(sch.Bind(l[0], "threadIdx.x"));
  }
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), Cuda());
  ASSERT_FALSE(module.ok());
  EXPECT_TRUE(Contains(std::string(module.status().message()),
                       "intermediate buffer T is in global memory"))
      << module.status();
}

TEST(CodegenCudaTest, RejectsCpuTarget) {
  Schedule sch = gpu_testing::ScheduleElementwise(64, 64, 32, 1);
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), *Target::Parse("cpu"));
  ASSERT_FALSE(module.ok());
  EXPECT_TRUE(Contains(std::string(module.status().message()), "is not a cuda target"));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// ---- Tensor cores and dp4a -------------------------------------------------------------------

// C[i, j] = sum_k float(A[i, k]) * float(B[k, j]) with float16 A, B and float32 C.
PrimFunc MixedPrecisionMatmul(int64_t n) {
  Tensor a = Placeholder({n, n}, DataType::Float16(), "A");
  Tensor b = Placeholder({n, n}, DataType::Float16(), "B");
  IterVar k = ReduceAxis(n, "k");
  Tensor c = Compute({n, n},
                     [&](const std::vector<Var>& i) {
                       return Sum(Cast(DataType::Float32(), a({i[0], k.var})) *
                                      Cast(DataType::Float32(), b({k.var, i[1]})),
                                  {k});
                     },
                     "C", {}, {"i", "j"});
  return *CreatePrimFunc("main", {a, b, c});
}

// 64^3 on tensor cores: blocks of 32 x 16 outputs, one warp (threadIdx.y) per 16 x 16 tile,
// A and B staged through shared memory by all 64 threads, then through fragments of `family`
// ("wmma" or "mma"); the shared rows StorageAlign(32, `row_pad`) apart unless `row_pad` is 0.
Schedule ScheduleFragments(const std::string& family = "wmma", int row_pad = 0) {
  const TensorCoreIntrins& g =
      *FindTensorCoreIntrins(DataType::Float16(), DataType::Float32(), family);
  Schedule sch = Schedule::Create(MixedPrecisionMatmul(64), 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = Loops(sch.GetLoops(c));
  auto split = [&](LoopRV loop, std::vector<int64_t> f) {
    std::vector<InstValue> factors;
    for (int64_t x : f) factors.push_back(x < 0 ? InstValue() : InstValue::Int(x));
    return Loops(sch.Split(loop, factors));
  };
  std::vector<LoopRV> i = split(l[0], {-1, 2, 16});
  std::vector<LoopRV> j = split(l[1], {-1, 16});
  std::vector<LoopRV> k = split(l[2], {-1, 16});
  Ok(sch.Reorder({i[0], j[0], i[1], k[0], i[2], j[1], k[1]}));
  Ok(sch.Bind(i[0], "blockIdx.y"));
  Ok(sch.Bind(j[0], "blockIdx.x"));
  Ok(sch.Bind(i[1], "threadIdx.y"));
  BlockRV c_frag = *sch.CacheWrite(c, 0, g.Scope("accumulator"));
  Ok(sch.ReverseComputeAt(c_frag, i[1]));
  auto stage = [&](const std::string& buffer, const char* intrin) {
    BlockRV shared = *sch.CacheRead(c, gpu_testing::ReadIndex(sch, c, buffer), "shared");
    if (row_pad > 0) Ok(sch.StorageAlign(shared, 0, 0, 32, row_pad));
    BlockRV frag = *sch.CacheRead(c, gpu_testing::ReadIndex(sch, c, buffer + "_shared"),
                                  g.Scope(buffer == "A" ? "matrix_a" : "matrix_b"));
    Ok(sch.ComputeAt(frag, k[0]));
    Ok(sch.ComputeAt(shared, k[0]));
    std::vector<LoopRV> copy = Loops(sch.GetLoops(shared));
    LoopRV fused = *sch.Fuse({copy[copy.size() - 2], copy.back()});
    std::vector<LoopRV> parts = split(fused, {-1, 2, 32});
    Ok(sch.Bind(parts[1], "threadIdx.y"));
    Ok(sch.Bind(parts[2], "threadIdx.x"));
    std::vector<LoopRV> frag_loops = Loops(sch.GetLoops(frag));
    Ok(sch.Tensorize(frag_loops[frag_loops.size() - 2], intrin));
  };
  stage("A", g.load_a);
  stage("B", g.load_b);
  BlockRV init = *sch.DecomposeReduction(c, k[0]);
  std::vector<LoopRV> init_loops = Loops(sch.GetLoops(init));
  Ok(sch.Tensorize(init_loops[init_loops.size() - 2], g.fill));
  Ok(sch.Tensorize(i[2], g.sync));
  std::vector<LoopRV> store_loops = Loops(sch.GetLoops(c_frag));
  Ok(sch.Tensorize(store_loops[store_loops.size() - 2], g.store));
  return sch;
}

// C[i] = sum_k int32(A[i, k]) * int32(B[i, k]) over int8 A, B; rows on threads, k split by 4
// and tensorized with __dp4a.
TEST(CodegenCudaTest, Dp4aCompiles) {
  Tensor a = Placeholder({64, 64}, DataType::Int8(), "A");
  Tensor b = Placeholder({64, 64}, DataType::Int8(), "B");
  IterVar k = ReduceAxis(64, "k");
  Tensor c = Compute({64},
                     [&](const std::vector<Var>& i) {
                       return Sum(Cast(DataType::Int32(), a({i[0], k.var})) *
                                      Cast(DataType::Int32(), b({i[0], k.var})),
                                  {k});
                     },
                     "C", {}, {"i"});
  Schedule sch = Schedule::Create(*CreatePrimFunc("main", {a, b, c}), 0);
  std::vector<LoopRV> l = Loops(sch.GetLoops(*sch.GetBlock("C")));
  std::vector<LoopRV> i = Loops(sch.Split(l[0], {InstValue(), InstValue::Int(32)}));
  std::vector<LoopRV> kk = Loops(sch.Split(l[1], {InstValue(), InstValue::Int(4)}));
  Ok(sch.Bind(i[0], "blockIdx.x"));
  Ok(sch.Bind(i[1], "threadIdx.x"));
  Ok(sch.Tensorize(kk[1], kDp4a));
  CudaModule module = GenerateAndCompile(sch.func());
  EXPECT_TRUE(Contains(module.source, "= __dp4a(tessera_pack_i8x4(&A[")) << module.source;
}

TEST(CodegenCudaTest, WmmaMatmulUsesFragments) {
  Schedule sch = ScheduleFragments();
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  EXPECT_EQ(module.kernels[0].block[0], 32);
  EXPECT_EQ(module.kernels[0].block[1], 2);
  const std::string& src = module.source;
  EXPECT_TRUE(Contains(src, "#include <mma.h>")) << src;
  EXPECT_TRUE(Contains(src, "wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> "
                            "A_shared_wmma_matrix_a[1];"))
      << src;
  EXPECT_TRUE(Contains(src, "wmma::fragment<wmma::accumulator, 16, 16, 16, float>")) << src;
  EXPECT_TRUE(Contains(src, "wmma::load_matrix_sync(")) << src;
  EXPECT_TRUE(Contains(src, "wmma::mma_sync(")) << src;
  EXPECT_TRUE(Contains(src, "wmma::fill_fragment(")) << src;
  EXPECT_TRUE(Contains(src, ", 64, wmma::mem_row_major);")) << src;
}

// Tessera's own fragments: the same calls in namespace tessera_mma, whose loads are ldmatrix and
// whose products are mma.sync.m16n8k16 (codegen/cuda_prelude.h); no WMMA header.
TEST(CodegenCudaTest, MmaMatmulUsesTesserasOwnFragments) {
  Schedule sch = ScheduleFragments("mma");
  CudaModule module = GenerateAndCompile(sch.func());
  ASSERT_EQ(module.kernels.size(), 1u);
  EXPECT_EQ(module.kernels[0].block[0], 32);
  const std::string& src = module.source;
  EXPECT_FALSE(Contains(src, "#include <mma.h>")) << src;
  EXPECT_FALSE(Contains(src, "wmma::")) << src;
  EXPECT_TRUE(Contains(src,
                       "tessera_mma::fragment<tessera_mma::matrix_a, half> "
                       "A_shared_mma_matrix_a[1];"))
      << src;
  EXPECT_TRUE(Contains(src, "tessera_mma::fragment<tessera_mma::accumulator, float>")) << src;
  for (const char* call :
       {"tessera_mma::load_matrix_sync(", "tessera_mma::mma_sync(", "tessera_mma::fill_fragment(",
        ", 64, tessera_mma::mem_row_major);", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "mma.sync.aligned.m16n8k16.row.col.f32."}) {
    EXPECT_TRUE(Contains(src, call)) << call;
  }
}

// ldmatrix reads 16-byte rows at 16-byte aligned addresses: the 16-wide shared tiles padded by 8
// elements (rows 48 bytes apart) compile, padded by 4 (40 bytes) are refused, saying which buffer
// and why.
TEST(CodegenCudaTest, MmaFragmentsNeedSixteenByteRows) {
  Schedule padded = ScheduleFragments("mma", 8);
  CudaModule module = GenerateAndCompile(padded.func());
  EXPECT_TRUE(Contains(module.source, "], 24);")) << module.source;
  absl::StatusOr<CudaModule> odd = GenerateCuda(ScheduleFragments("mma", 4).func(), Cuda());
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(Contains(std::string(odd.status().message()),
                       "tessera_mma::load_matrix_sync of A_shared: ldmatrix needs rows a constant "
                       "multiple of 16 bytes apart, the leading dimension is 20 elements"))
      << odd.status();
  // WMMA's loads take any leading dimension the API allows.
  EXPECT_TRUE(GenerateCuda(ScheduleFragments("wmma", 8).func(), Cuda()).ok());
}

}  // namespace
}  // namespace tessera
