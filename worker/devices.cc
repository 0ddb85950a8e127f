#include "worker/devices.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "worker/host.h"
#include "worker/runner_internal.h"

#if TESSERA_WITH_CUDA
#include "cuda/driver.h"
#endif

namespace tessera {
namespace {

constexpr int kMaxDevices = 64;
constexpr double kQueryTimeoutSec = 60;
constexpr int kNumAttributes = 9;

// One device as the child writes it into shared memory (plain data only).
struct DeviceRecord {
  char name[256];
  int32_t values[kNumAttributes];  // in the order of kAttributes
  int64_t total_memory_bytes;
};

struct QueryResult {
  internal::ChildMessage message;
  int32_t failed_precondition;  // the child's failure means "no device"
  int32_t driver_version;
  int32_t count;
  DeviceRecord devices[kMaxDevices];
};

#if TESSERA_WITH_CUDA
constexpr CUdevice_attribute kAttributes[kNumAttributes] = {
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
};

// The child: cuInit and read every device's attributes. Returns the exit code.
int QueryChild(const CudaDriver& d, QueryResult* out) {
  auto fail = [&](const absl::Status& status) {
    out->failed_precondition = absl::IsFailedPrecondition(status) ? 1 : 0;
    internal::ExitChildWithMessage(&out->message, std::string(status.message()));
  };
  absl::Status s = CudaCheck(d, d.cuInit(0), "cuInit");
  if (!s.ok()) fail(s);
  int version = 0, count = 0;
  if (!(s = CudaCheck(d, d.cuDriverGetVersion(&version), "cuDriverGetVersion")).ok()) fail(s);
  if (!(s = CudaCheck(d, d.cuDeviceGetCount(&count), "cuDeviceGetCount")).ok()) fail(s);
  out->driver_version = version;
  out->count = std::min(count, kMaxDevices);
  for (int i = 0; i < out->count; ++i) {
    CUdevice dev;
    DeviceRecord& r = out->devices[i];
    if (!(s = CudaCheck(d, d.cuDeviceGet(&dev, i), absl::StrCat("cuDeviceGet(", i, ")"))).ok()) {
      fail(s);
    }
    s = CudaCheck(d, d.cuDeviceGetName(r.name, sizeof(r.name) - 1, dev), "cuDeviceGetName");
    if (!s.ok()) fail(s);
    for (int a = 0; a < kNumAttributes; ++a) {
      s = CudaCheck(d, d.cuDeviceGetAttribute(&r.values[a], kAttributes[a], dev),
                    absl::StrCat("cuDeviceGetAttribute(", static_cast<int>(kAttributes[a]), ")"));
      if (!s.ok()) fail(s);
    }
    size_t bytes = 0;
    if (!(s = CudaCheck(d, d.cuDeviceTotalMem_v2(&bytes, dev), "cuDeviceTotalMem")).ok()) fail(s);
    r.total_memory_bytes = static_cast<int64_t>(bytes);
  }
  return 0;
}

#endif  // TESSERA_WITH_CUDA

absl::StatusOr<std::vector<CudaDeviceInfo>> QueryDevices() {
#if TESSERA_WITH_CUDA
  TESSERA_ASSIGN_OR_RETURN(const CudaDriver* driver, LoadCudaDriver());
  TESSERA_ASSIGN_OR_RETURN(internal::SharedMemory shared,
                           internal::SharedMemory::Map(sizeof(QueryResult), "cuda device query"));
  auto* result = reinterpret_cast<QueryResult*>(shared.data());
  absl::StatusOr<std::string> failure = internal::RunInChildProcess(
      [&]() { return QueryChild(*driver, result); }, kQueryTimeoutSec, &result->message);
  if (!failure.ok()) {
    return absl::Status(failure.status().code(),
                        absl::StrCat("cuda device query: ", failure.status().message()));
  }
  if (!failure->empty()) {
    if (result->failed_precondition) return absl::FailedPreconditionError(*failure);
    return absl::InternalError(absl::StrCat("cuda device query: ", *failure));
  }
  if (result->count == 0) {
    return absl::FailedPreconditionError("no CUDA device: the driver reports 0 devices");
  }
  std::vector<CudaDeviceInfo> devices;
  for (int i = 0; i < result->count; ++i) {
    const DeviceRecord& r = result->devices[i];
    CudaDeviceInfo info;
    info.ordinal = i;
    info.name = std::string(r.name, strnlen(r.name, sizeof(r.name)));
    info.compute_major = r.values[0];
    info.compute_minor = r.values[1];
    info.sm_count = r.values[2];
    info.warp_size = r.values[3];
    info.max_threads_per_block = r.values[4];
    info.max_shared_memory_per_block = r.values[5];
    info.max_shared_memory_per_block_optin = std::max(r.values[6], r.values[5]);
    info.max_registers_per_block = r.values[7];
    info.l2_cache_bytes = r.values[8];
    info.total_memory_bytes = r.total_memory_bytes;
    info.driver_version = result->driver_version;
    devices.push_back(std::move(info));
  }
  return devices;
#else
  return absl::FailedPreconditionError("no CUDA device: tessera was built without CUDA");
#endif
}

}  // namespace

std::string CudaDeviceInfo::arch() const {
  const bool hopper = compute_major == 9 && compute_minor == 0;
  return absl::StrCat("sm_", compute_major, compute_minor, hopper ? "a" : "");
}

absl::StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices() {
  static std::mutex mu;
  static std::vector<CudaDeviceInfo>* cached = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (cached != nullptr) return *cached;
  TESSERA_ASSIGN_OR_RETURN(std::vector<CudaDeviceInfo> devices, QueryDevices());
  cached = new std::vector<CudaDeviceInfo>(devices);
  return devices;
}

Target CudaTargetOf(const CudaDeviceInfo& device) {
  absl::StatusOr<Target> target = Target::Parse(absl::StrCat(
      "cuda -arch=", device.arch(), " -max_threads_per_block=", device.max_threads_per_block,
      " -max_shared_memory_per_block=", device.max_shared_memory_per_block_optin, " -warp_size=",
      device.warp_size, " -max_registers_per_block=", device.max_registers_per_block,
      " -sm_count=", device.sm_count));
  // Every value comes from the driver as a positive integer; a failure here is a bug.
  if (!target.ok()) return *Target::Parse("cuda");
  return *target;
}

absl::StatusOr<Target> ResolveCudaTarget(const std::string& text, int ordinal) {
  TESSERA_ASSIGN_OR_RETURN(Target target, Target::Parse(text));
  if (!target.is_cuda()) {
    return absl::InvalidArgumentError(absl::StrCat("target '", text, "' is not a cuda target"));
  }
  std::set<std::string> given = GivenTargetKeys(text);
  TESSERA_ASSIGN_OR_RETURN(std::vector<CudaDeviceInfo> devices, ListCudaDevices());
  if (ordinal < 0 || ordinal >= static_cast<int>(devices.size())) {
    return absl::NotFoundError(
        absl::StrCat("no CUDA device ", ordinal, " (there are ", devices.size(), ")"));
  }
  Target device = CudaTargetOf(devices[ordinal]);
  for (const auto& [key, value] : device.attrs()) {
    if (given.count(key) != 0) continue;
    TESSERA_ASSIGN_OR_RETURN(target, target.With(key, value));
  }
  return target;
}

}  // namespace tessera
