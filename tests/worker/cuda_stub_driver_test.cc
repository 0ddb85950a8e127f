// The CUDA runner's child-process path without a GPU: TESSERA_LIBCUDA points the driver table
// at the toolkit's stub libcuda, which loads (every symbol is there) but fails every call with
// CUDA_ERROR_STUB_LIBRARY. So device discovery and the runner fork their children, cuInit fails
// there, and the reason has to come back to the parent for every input. A binary of its own:
// the driver table is loaded once per process.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuda/module_file.h"
#include "gtest/gtest.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/cuda_runner.h"
#include "worker/devices.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

class CudaStubDriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("TESSERA_LIBCUDA", TESSERA_CUDA_STUB_LIBRARY, 1); }
  void SetUp() override {
    if (!std::filesystem::exists(TESSERA_CUDA_STUB_LIBRARY)) {
      GTEST_SKIP() << "no stub driver at " << TESSERA_CUDA_STUB_LIBRARY;
    }
  }
};

TEST_F(CudaStubDriverTest, DeviceQueryReportsTheChildsCuInitFailure) {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(devices.status().message()).rfind("no CUDA device: cuInit: ", 0), 0u)
      << devices.status();
}

TEST_F(CudaStubDriverTest, EveryInputGetsTheSetupFailure) {
  std::string dir = tessera::testing::ScratchDirUntilTestEnds("cuda_stub_driver_test");
  std::string path = dir + "/k.cubin";
  absl::StatusOr<std::string> cubin = CompileCudaSource(
      "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }", "sm_80");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  std::ofstream(path, std::ios::binary) << *cubin;
  CudaKernel kernel{"k", {1, 1, 1}, {32, 1, 1}, 0, {0}, {}};
  ASSERT_TRUE(WriteCudaManifest(path, CudaModuleFile{"sm_80", {kernel}}).ok());
  std::vector<ArgInfo> args = {ArgInfo{DataType::Float32(), {32}}};
  RunnerConfig config;
  config.timeout_sec = 20;
  std::vector<RunResult> results =
      NewCudaRunner()->Run({RunInput{path, "k", args}, RunInput{dir + "/missing.cubin", "k", args},
                            RunInput{path, "k", args}},
                           config);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].error_msg.rfind("no CUDA device: cuInit: ", 0), 0u) << results[0].error_msg;
  EXPECT_EQ(results[1].error_msg, "cannot read " + dir + "/missing.cubin");
  EXPECT_EQ(results[2].error_msg, results[0].error_msg);

  std::vector<NDArray> arrays = {NDArray::Empty(DataType::Float32(), {32})};
  absl::StatusOr<RunResult> ran = RunCudaKernel(path, &arrays, config);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->error_msg, results[0].error_msg);
  std::vector<NDArray> too_few = {};
  EXPECT_EQ(RunCudaKernel(path, &too_few, config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
