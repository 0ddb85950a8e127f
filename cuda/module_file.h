// A built CUDA module on disk, as the NVRTC builder writes it and the CUDA runner and the model
// runtime read it:
//
//   <stem>.cubin          the machine code (NVRTC output for one sm_XX)
//   <stem>.kernels.json   its launch manifest:
//     {"format": "tessera-cuda-module", "version": 1, "arch": "sm_90",
//      "kernels": [{"name": "main_kernel0", "grid": [64, 1, 1], "block": [128, 1, 1],
//                   "dynamic_shared_bytes": 0, "param_indices": [0, 1, 2],
//                   "tensor_maps": [{"param": 0, "dtype": "float16", "dims": [4096, 4096],
//                                    "box": [64, 128]}]}, ...]}
//
// The kernels are launched in the listed order; kernel k gets one device pointer per entry of
// its param_indices, the buffers of those function parameters (codegen/codegen_cuda.h), then
// one TMA tensor map per entry of tensor_maps (absent: none).
// BuildResult::artifact_path names the .cubin and BuildResult::symbol the first kernel; the
// manifest sits beside the cubin, so the two travel together.
#ifndef TESSERA_CUDA_MODULE_FILE_H_
#define TESSERA_CUDA_MODULE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera {

// A TMA tensor map a kernel takes after its pointers (`const __grid_constant__ CUtensorMap`),
// encoded at launch (cuTensorMapEncodeTiled) over the device buffer of function parameter
// `param`: elements of `dtype` ("float16", "bfloat16", "float32"), dense, of shape `dims`; one
// copy moves a `box`; both innermost first; 128-byte swizzle, no interleave, zeros out of bounds.
struct CudaTensorMap {
  int param = 0;
  std::string dtype;
  std::vector<int64_t> dims, box;
  friend bool operator==(const CudaTensorMap& a, const CudaTensorMap& b) {
    return a.param == b.param && a.dtype == b.dtype && a.dims == b.dims && a.box == b.box;
  }
};

// One kernel of a module and how it is launched (codegen/codegen_cuda.h emits them).
struct CudaKernel {
  std::string name;
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
  std::vector<int> param_indices;  // which func params the kernel takes, in order
  std::vector<CudaTensorMap> tensor_maps;  // taken after the pointers, in order
};

struct CudaModuleFile {
  std::string arch;  // "sm_90"
  std::vector<CudaKernel> kernels;
};

// "<dir>/k_7.cubin" -> "<dir>/k_7.kernels.json" (a path without ".cubin" gets the suffix
// appended).
std::string CudaManifestPath(const std::string& cubin_path);

// Writes the manifest of `module` beside `cubin_path`. kInternal when the file cannot be
// written.
absl::Status WriteCudaManifest(const std::string& cubin_path, const CudaModuleFile& module);

// Reads and validates the manifest beside `cubin_path`. kNotFound when it is missing;
// kInvalidArgument "<path>: ..." naming the bad field (no kernels, a non-positive grid or block
// extent, a negative shared memory size or parameter index, a tensor map of another rank than
// 2 to 5, of an unknown dtype or with a box side above 256).
absl::StatusOr<CudaModuleFile> ReadCudaManifest(const std::string& cubin_path);

}  // namespace tessera

#endif  // TESSERA_CUDA_MODULE_FILE_H_
