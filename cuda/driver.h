// The CUDA driver API as a table of function pointers, opened with dlopen("libcuda.so.1") at
// run time. Nothing in Tessera links libcuda (docs/deps.md T1): a binary that did could not start
// on a machine without a driver. CUDA 13's cuda.h maps API names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime -> cuEventElapsedTime_v2, ...); the table
// resolves exactly those symbols, so every entry has the signature cuda.h declares for it.
//
// Loading the table does not initialize CUDA (cuInit is an entry like any other). Tessera's
// processes that fork measurement children never call cuInit themselves: a process that has
// initialized CUDA cannot use it in a forked child (the model runtime, which forks nothing,
// does). Used by worker/ and the model runtime; only built with TESSERA_WITH_CUDA (it needs
// cuda.h).
#ifndef TESSERA_CUDA_DRIVER_H_
#define TESSERA_CUDA_DRIVER_H_

#include <cuda.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera {

// X(symbol, fallback): the symbol dlsym resolves and, where older drivers name it differently,
// the name to try when it is missing (nullptr: none).
#define TESSERA_CUDA_DRIVER_FUNCTIONS(X)                       \
  X(cuInit, nullptr)                                           \
  X(cuDriverGetVersion, nullptr)                               \
  X(cuGetErrorName, nullptr)                                   \
  X(cuGetErrorString, nullptr)                                 \
  X(cuDeviceGetCount, nullptr)                                 \
  X(cuDeviceGet, nullptr)                                      \
  X(cuDeviceGetName, nullptr)                                  \
  X(cuDeviceGetAttribute, nullptr)                             \
  X(cuDeviceTotalMem_v2, nullptr)                              \
  X(cuDevicePrimaryCtxRetain, nullptr)                         \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease") \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset")     \
  X(cuCtxSetCurrent, nullptr)                                  \
  X(cuCtxSynchronize, nullptr)                                 \
  X(cuModuleLoadData, nullptr)                                 \
  X(cuModuleUnload, nullptr)                                   \
  X(cuModuleGetFunction, nullptr)                              \
  X(cuFuncSetAttribute, nullptr)                               \
  X(cuLaunchKernel, nullptr)                                   \
  X(cuTensorMapEncodeTiled, nullptr)                           \
  X(cuMemAlloc_v2, nullptr)                                    \
  X(cuMemFree_v2, nullptr)                                     \
  X(cuMemcpyHtoD_v2, nullptr)                                  \
  X(cuMemcpyDtoH_v2, nullptr)                                  \
  X(cuMemsetD8_v2, nullptr)                                    \
  X(cuEventCreate, nullptr)                                    \
  X(cuEventRecord, nullptr)                                    \
  X(cuEventSynchronize, nullptr)                               \
  X(cuEventElapsedTime_v2, "cuEventElapsedTime")               \
  X(cuEventDestroy_v2, nullptr)

struct CudaDriver {
#define TESSERA_CUDA_DRIVER_MEMBER(symbol, fallback) decltype(&::symbol) symbol = nullptr;
  TESSERA_CUDA_DRIVER_FUNCTIONS(TESSERA_CUDA_DRIVER_MEMBER)
#undef TESSERA_CUDA_DRIVER_MEMBER
};

// The process's driver table, loaded on the first call (thread-safe; later calls return the
// same table or the same error) from libcuda.so.1 or, when the environment variable
// TESSERA_LIBCUDA is set, from that path (tests point it at the toolkit's stub library, whose
// every call fails with CUDA_ERROR_STUB_LIBRARY). kFailedPrecondition "no CUDA driver:
// libcuda.so.1: cannot open shared object file: No such file or directory" when there is no
// driver, or "no CUDA driver: libcuda.so.1 lacks cuMemAlloc_v2" when it is too old.
absl::StatusOr<const CudaDriver*> LoadCudaDriver();

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string CudaErrorText(const CudaDriver& driver, CUresult result);

// OkStatus for CUDA_SUCCESS, else kInternal "<what>: <CudaErrorText>"; kFailedPrecondition
// "no CUDA device: <what>: ..." for CUDA_ERROR_NO_DEVICE (and the stub library's error).
absl::Status CudaCheck(const CudaDriver& driver, CUresult result, const std::string& what);

}  // namespace tessera

#endif  // TESSERA_CUDA_DRIVER_H_
