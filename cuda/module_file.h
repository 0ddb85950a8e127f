// A built CUDA module on disk, as the NVRTC builder writes it and the CUDA runner and the model
// runtime read it:
//
//   <stem>.cubin          the machine code (NVRTC output for one sm_XX)
//   <stem>.kernels.json   its launch manifest:
//     {"format": "tessera-cuda-module", "version": 1, "arch": "sm_90",
//      "kernels": [{"name": "main_kernel0", "grid": [64, 1, 1], "block": [128, 1, 1],
//                   "dynamic_shared_bytes": 0, "param_indices": [0, 1, 2]}, ...]}
//
// The kernels are launched in the listed order; kernel k gets one device pointer per entry of
// its param_indices, the buffers of those function parameters (codegen/codegen_cuda.h).
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

// One kernel of a module and how it is launched (codegen/codegen_cuda.h emits them).
struct CudaKernel {
  std::string name;
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
  std::vector<int> param_indices;  // which func params the kernel takes, in order
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
// extent, a negative shared memory size or parameter index).
absl::StatusOr<CudaModuleFile> ReadCudaManifest(const std::string& cubin_path);

}  // namespace tessera

#endif  // TESSERA_CUDA_MODULE_FILE_H_
