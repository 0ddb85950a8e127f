// Tests of cuda/module_file.cc, in every build (no CUDA needed): the launch manifest
// beside a cubin round-trips (TMA tensor maps included), a bad manifest is kInvalidArgument naming the field, a missing one
// kNotFound.
#include "cuda/module_file.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace {

TEST(CudaModuleFileTest, ManifestRoundTripsAndRejectsBadFields) {
  std::string dir = tessera::testing::ScratchDirUntilTestEnds("manifest_test");
  std::string cubin = dir + "/m_0.cubin";
  EXPECT_EQ(CudaManifestPath(cubin), dir + "/m_0.kernels.json");
  CudaKernel a{"first", {4, 2, 1}, {128, 1, 1}, 0, {0, 2}, {}};
  CudaKernel b{"second", {1, 1, 1}, {32, 4, 1}, 65536, {1},
               {CudaTensorMap{1, "bfloat16", {4096, 512, 2}, {64, 128, 1}}}};
  ASSERT_TRUE(WriteCudaManifest(cubin, CudaModuleFile{"sm_90", {a, b}}).ok());
  absl::StatusOr<CudaModuleFile> read = ReadCudaManifest(cubin);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->arch, "sm_90");
  ASSERT_EQ(read->kernels.size(), 2u);
  EXPECT_EQ(read->kernels[0].name, "first");
  EXPECT_EQ(read->kernels[0].grid[0], 4);
  EXPECT_EQ(read->kernels[0].grid[1], 2);
  EXPECT_EQ(read->kernels[0].param_indices, (std::vector<int>{0, 2}));
  EXPECT_EQ(read->kernels[1].block[1], 4);
  EXPECT_EQ(read->kernels[1].dynamic_shared_bytes, 65536);
  EXPECT_TRUE(read->kernels[0].tensor_maps.empty());
  EXPECT_EQ(read->kernels[1].tensor_maps, b.tensor_maps);

  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {"not json", "not a JSON object"},
      {R"({"format": "other", "version": 1})", "not a tessera-cuda-module manifest"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": []})", "no kernels"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": [{"name": "k",
          "grid": [0, 1, 1], "block": [1, 1, 1], "param_indices": []}]})",
       "\"grid\" extents must be positive"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": [{"name": "k",
          "grid": [1, 1, 1], "block": [1, 1], "param_indices": []}]})",
       "\"block\" must be 3 integers"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": [{"name": "k",
          "grid": [1, 1, 1], "block": [1, 1, 1], "param_indices": [-1]}]})",
       "non-negative integers"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": [{"name": "k",
          "grid": [1, 1, 1], "block": [1, 1, 1], "param_indices": [0], "tensor_maps":
          [{"param": 0, "dtype": "int8", "dims": [64, 64], "box": [64, 64]}]}]})",
       "\"dtype\" must be float16, bfloat16 or float32"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": [{"name": "k",
          "grid": [1, 1, 1], "block": [1, 1, 1], "param_indices": [0], "tensor_maps":
          [{"param": 0, "dtype": "float16", "dims": [64], "box": [64]}]}]})",
       "needs 2 to 5 dimensions"},
      {R"({"format": "tessera-cuda-module", "version": 1, "kernels": [{"name": "k",
          "grid": [1, 1, 1], "block": [1, 1, 1], "param_indices": [0], "tensor_maps":
          [{"param": 0, "dtype": "float16", "dims": [4096, 4096], "box": [64, 512]}]}]})",
       "a box side exceeds 256"},
  };
  for (const Case& c : cases) {
    std::ofstream(CudaManifestPath(cubin)) << c.text;
    absl::StatusOr<CudaModuleFile> bad = ReadCudaManifest(cubin);
    ASSERT_FALSE(bad.ok()) << c.text;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(bad.status().message()).find(c.expected), std::string::npos)
        << bad.status();
  }
  absl::StatusOr<CudaModuleFile> missing = ReadCudaManifest(dir + "/none.cubin");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(CudaModuleFileTest, ManifestPathOfAPathWithoutCubinGetsTheSuffix) {
  EXPECT_EQ(CudaManifestPath("/tmp/k_7.cubin"), "/tmp/k_7.kernels.json");
  EXPECT_EQ(CudaManifestPath("/tmp/k_7"), "/tmp/k_7.kernels.json");
}

}  // namespace
}  // namespace tessera
