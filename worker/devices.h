// CUDA device discovery. The driver is queried in a forked child process (worker/
// runner_internal.h), so the calling process never initializes CUDA and can go on forking
// measurement children that do (a process that has initialized CUDA cannot use it in a forked
// child). Results are cached per process after the first successful query.
#ifndef TESSERA_WORKER_DEVICES_H_
#define TESSERA_WORKER_DEVICES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target.h"

namespace tessera {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int64_t max_shared_memory_per_block = 0;        // without opting in (48 KiB)
  int64_t max_shared_memory_per_block_optin = 0;  // with cuFuncSetAttribute (227 KiB on H100)
  int64_t max_registers_per_block = 0;
  int64_t l2_cache_bytes = 0;
  int64_t total_memory_bytes = 0;
  int driver_version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0

  // "sm_86" for compute capability 8.6; "sm_90a" for 9.0, whose code may use the features of
  // that one architecture (wgmma, which Tessera's Hopper kernels need and later GPUs lack).
  std::string arch() const;
};

// Every CUDA device, in ordinal order. kFailedPrecondition "no CUDA driver: libcuda.so.1:
// cannot open shared object file: No such file or directory", "no CUDA device: cuInit:
// CUDA_ERROR_NO_DEVICE (...)", "no CUDA device: the driver reports 0 devices", or "no CUDA
// device: tessera was built without CUDA"; kInternal for other driver failures.
absl::StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices();

// The target describing `device`: cuda -arch=sm_XX -max_threads_per_block=...
// -max_shared_memory_per_block=<opt-in maximum> -warp_size=... -max_registers_per_block=...
// -sm_count=.... The shared memory limit is the opt-in one: the CUDA runner raises each
// kernel's dynamic shared memory limit to what its manifest asks for.
Target CudaTargetOf(const CudaDeviceInfo& device);

// Parses a cuda target string (ir/target.h) and fills the keys the text does not give from
// device `ordinal`. Errors: those of Target::Parse, kInvalidArgument when the text is not a cuda
// target, and those of ListCudaDevices (kFailedPrecondition without a device) or kNotFound for
// a missing ordinal.
absl::StatusOr<Target> ResolveCudaTarget(const std::string& text, int ordinal = 0);

}  // namespace tessera

#endif  // TESSERA_WORKER_DEVICES_H_
