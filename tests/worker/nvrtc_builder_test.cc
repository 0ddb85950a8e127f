// Tests of the NVRTC builder that need no GPU: compiling CUDA C++ to cubins for several
// architectures, the program log on errors, parallel compilation, and building scheduled
// functions through codegen/codegen_cuda.h (the launch manifest: cuda_module_file_test.cc).
#include "worker/nvrtc_builder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cuda/module_file.h"
#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/codegen/test_funcs.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace {

constexpr char kAxpy[] = R"(
extern "C" __global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float a,
                                int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

bool IsElf(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// NVRTC 13 loads and initializes the CUDA driver in the process that calls it, after which no
// forked child can use CUDA (cuInit: CUDA_ERROR_NOT_INITIALIZED, seen on an H100): the compiler
// runs in a child process, and this one maps neither NVRTC's builtins nor the driver.
TEST(CompileCudaSourceTest, TheCompilerRunsInAChildProcess) {
  absl::StatusOr<std::string> cubin = CompileCudaSource(kAxpy, "sm_80");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_TRUE(IsElf(*cubin));
  const std::string maps = ReadAll("/proc/self/maps");
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(maps.find("libnvrtc-builtins"), std::string::npos);
  EXPECT_EQ(maps.find("libcuda.so"), std::string::npos);
  // A compilation error still comes back whole.
  absl::StatusOr<std::string> broken = CompileCudaSource("this is not CUDA", "sm_80");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find("this is not CUDA"), std::string::npos)
      << broken.status();
}

TEST(CompileCudaSourceTest, CompilesForSm80AndSm90) {
  absl::StatusOr<std::string> sm80 = CompileCudaSource(kAxpy, "sm_80");
  ASSERT_TRUE(sm80.ok()) << sm80.status();
  absl::StatusOr<std::string> sm90 = CompileCudaSource(kAxpy, "sm_90");
  ASSERT_TRUE(sm90.ok()) << sm90.status();
  EXPECT_TRUE(IsElf(*sm80));
  EXPECT_TRUE(IsElf(*sm90));
  EXPECT_NE(*sm80, *sm90) << "machine code for different architectures";
  EXPECT_NE(sm90->find("axpy"), std::string::npos) << "the extern \"C\" name is in the cubin";
  absl::StatusOr<std::string> sm90a = CompileCudaSource(kAxpy, "sm_90a");
  EXPECT_TRUE(sm90a.ok()) << sm90a.status();
}

TEST(CompileCudaSourceTest, HalfPrecisionHeadersAreOnTheIncludePath) {
  const char* source = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void scale(half* __restrict__ x, __nv_bfloat16* __restrict__ y) {
  x[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * 2.0f);
  y[threadIdx.x] = __float2bfloat16(__bfloat162float(y[threadIdx.x]) + 1.0f);
}
)";
  absl::StatusOr<std::string> cubin = CompileCudaSource(source, "sm_80");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_TRUE(IsElf(*cubin));

  NvrtcCompileOptions nowhere;
  nowhere.include_dir = "/nonexistent-cuda/include";
  absl::StatusOr<std::string> missing = CompileCudaSource(source, "sm_80", nowhere);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("cuda_fp16.h"), std::string::npos)
      << missing.status();
}

TEST(CompileCudaSourceTest, SyntaxErrorReturnsTheProgramLog) {
  const char* source = R"(
extern "C" __global__ void broken(float* x) {
  x[threadIdx.x] = undeclared_thing + 1.0f;
}
)";
  absl::StatusOr<std::string> cubin = CompileCudaSource(source, "sm_80");
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.status().code(), absl::StatusCode::kInvalidArgument);
  std::string message(cubin.status().message());
  EXPECT_EQ(message.rfind("nvrtc: compilation for sm_80 failed:\n", 0), 0u) << message;
  EXPECT_NE(message.find("tessera.cu(3)"), std::string::npos) << message;
  EXPECT_NE(message.find("undeclared_thing"), std::string::npos) << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;
}

TEST(CompileCudaSourceTest, UnknownArchitectureIsAnError) {
  std::vector<std::string> supported = NvrtcSupportedArchs();
  ASSERT_FALSE(supported.empty());
  EXPECT_NE(std::find(supported.begin(), supported.end(), "sm_90"), supported.end());
  for (std::string arch : {"sm_52", "sm_9x", "", "compute_90", "sm_90b", "gfx90a"}) {
    absl::StatusOr<std::string> cubin = CompileCudaSource(kAxpy, arch);
    ASSERT_FALSE(cubin.ok()) << arch;
    EXPECT_EQ(cubin.status().code(), absl::StatusCode::kInvalidArgument) << arch;
    std::string message(cubin.status().message());
    EXPECT_NE(message.find("is not supported by NVRTC"), std::string::npos) << message;
    EXPECT_NE(message.find("sm_80 "), std::string::npos) << "lists the supported ones: " << message;
  }
}

TEST(CompileCudaSourceTest, CompilesDistinctProgramsInParallelThreads) {
  constexpr int kThreads = 4;
  std::vector<absl::StatusOr<std::string>> results(kThreads, std::string());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &results]() {
      std::string source = absl::StrCat("extern \"C\" __global__ void k", t,
                                        "(float* x) { x[threadIdx.x] *= ", t + 2, ".0f; }\n");
      if (t == 2) source += "this is not C++;\n";  // one bad candidate among good ones
      results[t] = CompileCudaSource(source, t % 2 ? "sm_90" : "sm_80");
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    if (t == 2) {
      ASSERT_FALSE(results[t].ok());
      EXPECT_NE(std::string(results[t].status().message()).find("compilation for sm_80 failed"),
                std::string::npos);
      continue;
    }
    ASSERT_TRUE(results[t].ok()) << t << ": " << results[t].status();
    EXPECT_TRUE(IsElf(*results[t]));
    EXPECT_NE(results[t]->find(absl::StrCat("k", t)), std::string::npos);
  }
}

// C = A * B with the i, j loops fused, split by `threads` and bound to blockIdx.x/threadIdx.x
// (one thread per element of C).
PrimFunc ThreadPerElementMatmul(int64_t threads) {
  Schedule sch = Schedule::Create(testing_funcs::Matmul(64, 48, 32), /*seed=*/0);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  LoopRV fused = *sch.Fuse({loops[0], loops[1]});
  std::vector<LoopRV> split = *sch.Split(fused, {InstValue(), InstValue::Int(threads)});
  EXPECT_TRUE(sch.Bind(split[0], "blockIdx.x").ok());
  EXPECT_TRUE(sch.Bind(split[1], "threadIdx.x").ok());
  return sch.func();
}

Target Cuda(const std::string& arch) { return *Target::Parse("cuda -arch=" + arch); }

TEST(NvrtcBuilderTest, BuildsScheduledCandidatesInParallel) {
  std::string dir = tessera::testing::ScratchDirUntilTestEnds("nvrtc_builder_parallel");
  NvrtcBuilderOptions options;
  options.work_dir = dir;
  options.parallelism = 3;
  std::unique_ptr<Builder> builder = NewNvrtcBuilder(options);
  const std::vector<int64_t> threads = {32, 64, 128, 256};
  std::vector<BuildInput> inputs;
  for (int64_t t : threads) inputs.push_back(BuildInput{ThreadPerElementMatmul(t), Cuda("sm_90")});
  inputs.push_back(BuildInput{ThreadPerElementMatmul(64), Cuda("sm_80")});
  std::vector<BuildResult> results = builder->Build(inputs);
  ASSERT_EQ(results.size(), inputs.size());
  std::set<std::string> paths;
  for (size_t i = 0; i < results.size(); ++i) {
    const BuildResult& r = results[i];
    ASSERT_TRUE(r.ok()) << i << ": " << r.error_msg;
    EXPECT_GT(r.compile_seconds, 0);
    EXPECT_EQ(r.artifact_path.rfind(dir + "/", 0), 0u) << r.artifact_path;
    paths.insert(r.artifact_path);
    EXPECT_TRUE(IsElf(ReadAll(r.artifact_path)));
    std::string source = ReadAll(r.artifact_path.substr(0, r.artifact_path.size() - 6) + ".cu");
    EXPECT_NE(source.find("__global__"), std::string::npos) << source;
    absl::StatusOr<CudaModuleFile> manifest = ReadCudaManifest(r.artifact_path);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    EXPECT_EQ(manifest->arch, i < threads.size() ? "sm_90" : "sm_80");
    ASSERT_EQ(manifest->kernels.size(), 1u);
    const CudaKernel& k = manifest->kernels[0];
    EXPECT_EQ(r.symbol, k.name);
    EXPECT_NE(source.find(k.name), std::string::npos);
    int64_t t = i < threads.size() ? threads[i] : 64;
    EXPECT_EQ(k.block[0] * k.block[1] * k.block[2], t);
    EXPECT_EQ(k.grid[0] * k.grid[1] * k.grid[2], 64 * 48 / t);
    EXPECT_EQ(k.param_indices, (std::vector<int>{0, 1, 2}));
  }
  EXPECT_EQ(paths.size(), results.size()) << "every candidate has its own artifact";
}

TEST(NvrtcBuilderTest, FailuresAreResultsNamingTheReason) {
  std::unique_ptr<Builder> builder = NewNvrtcBuilder();
  std::vector<BuildResult> results = builder->Build({
      BuildInput{testing_funcs::Matmul(16, 16, 16), Cuda("sm_90")},  // no thread bindings
      BuildInput{ThreadPerElementMatmul(64), *Target::Parse("cpu")},
      BuildInput{ThreadPerElementMatmul(64), Cuda("sm_90")},
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error_msg.rfind("cuda codegen: ", 0), 0u) << results[0].error_msg;
  EXPECT_TRUE(results[0].artifact_path.empty());
  EXPECT_FALSE(results[1].ok());
  EXPECT_NE(results[1].error_msg.find("is not a cuda target"), std::string::npos)
      << results[1].error_msg;
  EXPECT_TRUE(results[2].ok()) << results[2].error_msg;

  NvrtcBuilderOptions old_arch;
  old_arch.arch = "sm_52";  // overrides the target's
  std::vector<BuildResult> old =
      NewNvrtcBuilder(old_arch)->Build({BuildInput{ThreadPerElementMatmul(64), Cuda("sm_90")}});
  ASSERT_EQ(old.size(), 1u);
  EXPECT_NE(old[0].error_msg.find("architecture sm_52 is not supported"), std::string::npos)
      << old[0].error_msg;
}

TEST(NvrtcBuilderTest, TemporaryWorkDirIsRemovedWithTheBuilder) {
  std::string artifact;
  {
    std::unique_ptr<Builder> builder = NewNvrtcBuilder();
    std::vector<BuildResult> results =
        builder->Build({BuildInput{ThreadPerElementMatmul(128), Cuda("sm_80")}});
    ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
    artifact = results[0].artifact_path;
    EXPECT_TRUE(std::filesystem::exists(artifact));
    EXPECT_TRUE(std::filesystem::exists(CudaManifestPath(artifact)));
  }
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(artifact).parent_path()));
}

}  // namespace
}  // namespace tessera
