// Tests of worker/devices.cc: the target a device's properties give, exactly; a cuda target
// resolved against the device keeps the keys the text gives; errors for text that is not a cuda
// target. Without a GPU (CI) discovery must say why ("no CUDA driver: ...", "no CUDA device:
// ...") and the device test skips.
#include "worker/devices.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

// An H100 SXM as its driver reports it.
CudaDeviceInfo H100() {
  CudaDeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.compute_major = 9;
  d.compute_minor = 0;
  d.sm_count = 132;
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  d.max_shared_memory_per_block = 49152;
  d.max_shared_memory_per_block_optin = 232448;
  d.max_registers_per_block = 65536;
  d.l2_cache_bytes = 52428800;
  d.total_memory_bytes = int64_t{85} << 30;
  d.driver_version = 13000;
  return d;
}

TEST(CudaDevicesTest, ArchIsSmAndTheComputeCapability) {
  CudaDeviceInfo d = H100();
  EXPECT_EQ(d.arch(), "sm_90a") << "Hopper's own features (wgmma) need the arch-specific target";
  d.compute_major = 8;
  d.compute_minor = 6;
  EXPECT_EQ(d.arch(), "sm_86");
}

TEST(CudaDevicesTest, TargetOfADeviceCarriesItsLimitsWithTheOptInSharedMemory) {
  Target t = CudaTargetOf(H100());
  EXPECT_TRUE(t.is_cuda());
  EXPECT_EQ(t.arch(), "sm_90a");
  EXPECT_EQ(t.max_threads_per_block(), 1024);
  EXPECT_EQ(t.max_shared_memory_per_block(), 232448) << "the opt-in limit, not the default 48 KiB";
  EXPECT_EQ(t.warp_size(), 32);
  EXPECT_EQ(t.GetInt("max_registers_per_block"), 65536);
  EXPECT_EQ(t.GetInt("sm_count"), 132);
  absl::StatusOr<Target> again = Target::Parse(t.ToString());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, t);
}

TEST(CudaDevicesTest, ResolvingRefusesTextThatIsNotACudaTarget) {
  absl::StatusOr<Target> cpu = ResolveCudaTarget("cpu -cores=2");
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu.status().message(), "target 'cpu -cores=2' is not a cuda target");
  absl::StatusOr<Target> bad = ResolveCudaTarget("cuda -arch=90");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "target cuda: -arch must look like sm_90, got '90'");
}

TEST(CudaDevicesTest, ResolvingAMissingOrdinalNamesIt) {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda", 1000);
  if (!devices.ok()) {
    EXPECT_EQ(target.status().code(), absl::StatusCode::kFailedPrecondition);
    return;
  }
  EXPECT_EQ(target.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(target.status().message(),
            "no CUDA device 1000 (there are " + std::to_string(devices->size()) + ")");
}

TEST(CudaDevicesTest, ListsDevicesOrSaysWhyNot) {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  if (!devices.ok()) {
    EXPECT_EQ(devices.status().code(), absl::StatusCode::kFailedPrecondition);
    std::string message(devices.status().message());
    EXPECT_TRUE(message.rfind("no CUDA driver: ", 0) == 0 ||
                message.rfind("no CUDA device: ", 0) == 0)
        << message;
    absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
    EXPECT_EQ(target.status().code(), absl::StatusCode::kFailedPrecondition);
    GTEST_SKIP() << message;
  }
  ASSERT_FALSE(devices->empty());
  for (const CudaDeviceInfo& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_major, 7);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_EQ(d.warp_size, 32);
    EXPECT_GE(d.max_threads_per_block, 512);
    EXPECT_GE(d.max_shared_memory_per_block, 48 * 1024);
    EXPECT_GE(d.max_shared_memory_per_block_optin, d.max_shared_memory_per_block);
    EXPECT_GT(d.l2_cache_bytes, 0);
    EXPECT_GT(d.total_memory_bytes, int64_t{1} << 30);
    Target t = CudaTargetOf(d);
    EXPECT_EQ(t.arch(), d.arch());
    EXPECT_EQ(t.GetInt("sm_count"), d.sm_count);
    EXPECT_EQ(t.max_shared_memory_per_block(), d.max_shared_memory_per_block_optin);
  }
  absl::StatusOr<Target> resolved = ResolveCudaTarget("cuda -sm_count=7");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->GetInt("sm_count"), 7) << "given keys stay";
  EXPECT_EQ(resolved->arch(), (*devices)[0].arch());
}

}  // namespace
}  // namespace tessera
