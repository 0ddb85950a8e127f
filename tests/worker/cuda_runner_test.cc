// Tests of the CUDA runner (device discovery is in devices_test.cc). Without a GPU (CI) the
// device tests skip ("no CUDA device: <reason>") and only the error paths run: missing driver
// or device, missing files. With one, hand-written kernels (compiled with NVRTC, manifests written
// here) check outputs, kernel order, timing, crash isolation (illegal address, hang) and large
// dynamic shared memory; the last test builds a scheduled function end to end with the NVRTC
// builder.
#include "worker/cuda_runner.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "cuda/module_file.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "schedule/schedule.h"
#include "tests/codegen/test_funcs.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/check.h"
#include "worker/devices.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

// "" when a device is there, else why not, as "no CUDA device: ...".
std::string NoDeviceReason() {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  if (devices.ok()) return "";
  std::string message(devices.status().message());
  return message.rfind("no CUDA device", 0) == 0 ? message : "no CUDA device: " + message;
}

#define SKIP_WITHOUT_GPU()                       \
  do {                                           \
    std::string reason = NoDeviceReason();       \
    if (!reason.empty()) GTEST_SKIP() << reason; \
  } while (false)

std::string DeviceArch() { return (*ListCudaDevices())[0].arch(); }

// Compiles `source` for the device and writes it with a manifest of `kernels`; returns the
// cubin path.
std::string WriteModule(const std::string& name, const std::string& source,
                        const std::vector<CudaKernel>& kernels) {
  std::string dir = tessera::testing::ScratchDirUntilTestEnds("cuda_runner_test");
  std::string path = absl::StrCat(dir, "/", name, ".cubin");
  absl::StatusOr<std::string> cubin = CompileCudaSource(source, DeviceArch());
  EXPECT_TRUE(cubin.ok()) << cubin.status();
  std::ofstream(path, std::ios::binary) << (cubin.ok() ? *cubin : std::string());
  EXPECT_TRUE(WriteCudaManifest(path, CudaModuleFile{DeviceArch(), kernels}).ok());
  return path;
}

CudaKernel Kernel(const std::string& name, int64_t grid, int64_t block, std::vector<int> params,
                  int64_t smem = 0) {
  return CudaKernel{name, {grid, 1, 1}, {block, 1, 1}, smem, std::move(params), {}};
}

RunnerConfig Once() {
  RunnerConfig config;
  config.warmup = 0;
  config.repeat = 1;
  config.timeout_sec = 20;
  return config;
}

std::vector<NDArray> Floats(int n, int count, int64_t seed) {
  Random rng(seed);
  std::vector<NDArray> arrays;
  for (int i = 0; i < count; ++i) {
    arrays.push_back(NDArray::Empty(DataType::Float32(), {n}));
    arrays.back().FillRandom(&rng);
  }
  return arrays;
}

constexpr char kTwoKernels[] = R"(
extern "C" __global__ void twice(const float* __restrict__ a, float* __restrict__ b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  b[i] = 2.0f * a[i];
}
extern "C" __global__ void plus_one(const float* __restrict__ b, float* __restrict__ c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = b[i] + 1.0f;
}
extern "C" __global__ void bad_address(float* __restrict__ c) {
  c[(1ll << 40) + threadIdx.x] = 1.0f;
}
extern "C" __global__ void spin(float* __restrict__ c) {
  volatile int forever = 1;
  while (forever) c[threadIdx.x] += 1.0f;
}
extern "C" __global__ void big_shared(const float* __restrict__ a, float* __restrict__ c) {
  extern __shared__ float tile[];  // 64 KiB: needs the opt-in
  int n = 16384;
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = a[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) c[i] = tile[n - 1 - i];
}
)";

TEST(CudaRunnerTest, MissingModuleFilesAreResults) {
  std::unique_ptr<Runner> runner = NewCudaRunner();
  std::vector<RunResult> results = runner->Run(
      {RunInput{"/nonexistent/k.cubin", "k", {ArgInfo{DataType::Float32(), {4}}}}}, Once());
  ASSERT_EQ(results.size(), 1u);
#if TESSERA_WITH_CUDA
  EXPECT_EQ(results[0].error_msg, "cannot read /nonexistent/k.cubin");
#else
  EXPECT_EQ(results[0].error_msg, "cuda runner: tessera was built without CUDA");
#endif
}

TEST(CudaRunnerTest, WithoutDeviceEveryResultSaysWhy) {
  if (NoDeviceReason().empty()) GTEST_SKIP() << "a CUDA device is present";
#if TESSERA_WITH_CUDA
  std::string dir = tessera::testing::ScratchDirUntilTestEnds("cuda_runner_nodevice");
  std::string path = dir + "/k.cubin";
  absl::StatusOr<std::string> cubin = CompileCudaSource(kTwoKernels, "sm_80");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  std::ofstream(path, std::ios::binary) << *cubin;
  ASSERT_TRUE(
      WriteCudaManifest(path, CudaModuleFile{"sm_80", {Kernel("twice", 1, 4, {0, 1})}}).ok());
  std::vector<ArgInfo> args(2, ArgInfo{DataType::Float32(), {4}});
  std::vector<RunResult> results =
      NewCudaRunner()->Run({RunInput{path, "twice", args}, RunInput{path, "twice", args}}, Once());
  ASSERT_EQ(results.size(), 2u);
  for (const RunResult& r : results) {
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(r.error_msg.rfind("no CUDA driver: ", 0) == 0 ||
                r.error_msg.rfind("no CUDA device: ", 0) == 0)
        << r.error_msg;
  }
  std::vector<NDArray> arrays = Floats(4, 2, 1);
  absl::StatusOr<RunResult> ran = RunCudaKernel(path, &arrays, Once());
  EXPECT_EQ(ran.status().code(), absl::StatusCode::kFailedPrecondition) << ran.status();
#endif
}

TEST(CudaRunnerTest, RunsKernelsInOrderAndCopiesOutputsBack) {
  SKIP_WITHOUT_GPU();
  constexpr int n = 4096;
  std::string path = WriteModule(
      "order", kTwoKernels,
      {Kernel("twice", n / 256, 256, {0, 1}), Kernel("plus_one", n / 128, 128, {1, 2})});
  std::vector<NDArray> args = Floats(n, 3, 5);
  NDArray a = args[0].Clone();
  absl::StatusOr<RunResult> ran = RunCudaKernel(path, &args, Once());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  ASSERT_EQ(ran->run_secs.size(), 1u);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(args[1].GetFlat(i), 2 * a.GetFlat(i)) << i;
    ASSERT_FLOAT_EQ(args[2].GetFlat(i), 2 * a.GetFlat(i) + 1) << i;
  }
}

TEST(CudaRunnerTest, TimesRepeatsWithEventsAndFlushesL2) {
  SKIP_WITHOUT_GPU();
  constexpr int n = 1 << 20;
  std::string path = WriteModule("timing", kTwoKernels, {Kernel("twice", n / 256, 256, {0, 1})});
  RunnerConfig config;
  config.warmup = 2;
  config.repeat = 4;
  config.min_repeat_ms = 5;
  config.enable_cpu_cache_flush = true;
  std::vector<ArgInfo> args(2, ArgInfo{DataType::Float32(), {n}});
  std::vector<RunResult> results = NewCudaRunner()->Run({RunInput{path, "twice", args}}, config);
  ASSERT_TRUE(results[0].ok()) << results[0].error_msg;
  ASSERT_EQ(results[0].run_secs.size(), 4u);
  for (double s : results[0].run_secs) {
    EXPECT_GT(s, 0);
    EXPECT_LT(s, 5e-3) << "one 4 MiB scale is microseconds: `number` grew for min_repeat_ms";
  }
}

TEST(CudaRunnerTest, IllegalAddressAndHangCostOnlyTheirOwnMeasurement) {
  SKIP_WITHOUT_GPU();
  constexpr int n = 1024;
  std::vector<ArgInfo> args(2, ArgInfo{DataType::Float32(), {n}});
  std::string good = WriteModule("good", kTwoKernels, {Kernel("twice", n / 256, 256, {0, 1})});
  std::string bad = WriteModule("bad", kTwoKernels, {Kernel("bad_address", 1, 32, {1})});
  std::string hang = WriteModule("hang", kTwoKernels, {Kernel("spin", 1, 32, {1})});
  RunnerConfig config = Once();
  config.timeout_sec = 3;
  std::vector<RunResult> results = NewCudaRunner()->Run(
      {RunInput{good, "", args}, RunInput{bad, "", args}, RunInput{good, "", args},
       RunInput{hang, "", args}, RunInput{good, "", args}},
      config);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_msg;
  EXPECT_NE(results[1].error_msg.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << results[1].error_msg;
  EXPECT_NE(results[1].error_msg.find("bad_address"), std::string::npos) << results[1].error_msg;
  EXPECT_TRUE(results[2].ok()) << "a fresh child after the sticky error: " << results[2].error_msg;
  EXPECT_EQ(results[3].error_msg, "timed out after 3s");
  EXPECT_TRUE(results[4].ok()) << results[4].error_msg;
}

TEST(CudaRunnerTest, LargeDynamicSharedMemoryIsOptedInto) {
  SKIP_WITHOUT_GPU();
  constexpr int n = 16384;
  std::string path =
      WriteModule("smem", kTwoKernels, {Kernel("big_shared", 1, 256, {0, 1}, n * 4)});
  std::vector<NDArray> args = Floats(n, 2, 9);
  absl::StatusOr<RunResult> ran = RunCudaKernel(path, &args, Once());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  for (int i = 0; i < n; ++i) ASSERT_EQ(args[1].GetFlat(i), args[0].GetFlat(n - 1 - i)) << i;
}

TEST(CudaRunnerTest, ScheduledMatmulMatchesTheInterpreter) {
  SKIP_WITHOUT_GPU();
  PrimFunc func = testing_funcs::Matmul(64, 48, 32);
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  LoopRV fused = *sch.Fuse({loops[0], loops[1]});
  std::vector<LoopRV> split = *sch.Split(fused, {InstValue(), InstValue::Int(128)});
  ASSERT_TRUE(sch.Bind(split[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(split[1], "threadIdx.x").ok());
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
  ASSERT_TRUE(target.ok()) << target.status();
  // The builder owns its work directory, where the cubin is: it lives until the run.
  std::unique_ptr<Builder> builder = NewNvrtcBuilder();
  std::vector<BuildResult> built = builder->Build({BuildInput{sch.func(), *target}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;

  std::vector<NDArray> actual = RandomArgs(func, /*seed=*/3);
  std::vector<NDArray> expected;
  std::vector<NDArray*> pointers;
  for (const NDArray& a : actual) expected.push_back(a.Clone());
  for (NDArray& e : expected) pointers.push_back(&e);
  ASSERT_TRUE(Interpret(func, pointers).ok());
  absl::StatusOr<RunResult> ran = RunCudaKernel(built[0].artifact_path, &actual, Once());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  absl::StatusOr<Comparison> cmp = Compare(actual[2], expected[2]);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << cmp->mismatches << " mismatches, max abs error " << cmp->max_abs_error;
}

}  // namespace
}  // namespace tessera
