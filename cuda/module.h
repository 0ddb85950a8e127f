// A built CUDA module (a cubin and its launch manifest, cuda/module_file.h) loaded into the
// current context: its kernels looked up once, then launched in manifest order on device
// buffers. The CUDA runner (worker/cuda_runner.h) times modules with it, the model runtime
// (model/executor.h) runs a compiled model's kernels with it. Only built with TESSERA_WITH_CUDA.
#ifndef TESSERA_CUDA_MODULE_H_
#define TESSERA_CUDA_MODULE_H_

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuda/driver.h"
#include "cuda/module_file.h"

namespace tessera {

class LoadedCudaModule {
 public:
  // Loads `cubin` (its bytes) into the calling thread's current context and looks up every
  // kernel of `manifest`, opting in to dynamic shared memory above the static 48 KiB where a
  // kernel needs it. Errors as CudaCheck, "<where>: loading the module: ..." or "<where>: kernel
  // <name> ..." (`where`: who loads it, "cuda runner", or the function's name).
  static absl::StatusOr<std::unique_ptr<LoadedCudaModule>> Load(const CudaDriver& driver,
                                                                const std::string& cubin,
                                                                CudaModuleFile manifest,
                                                                const std::string& where);
  ~LoadedCudaModule();
  LoadedCudaModule(const LoadedCudaModule&) = delete;
  LoadedCudaModule& operator=(const LoadedCudaModule&) = delete;

  // Launches every kernel in manifest order on `stream` (nullptr: the default stream);
  // `params[i]` is the device address of the function's parameter i. Asynchronous: a kernel's
  // own failure shows at the next synchronization. kInvalidArgument when a kernel takes a
  // parameter beyond `params`; a failed launch as CudaCheck, naming the kernel.
  absl::Status Launch(const std::vector<CUdeviceptr>& params, CUstream stream = nullptr) const;

  const CudaModuleFile& manifest() const { return manifest_; }
  // "main_kernel0, main_kernel1": what a launch runs, for errors.
  std::string KernelNames() const;

 private:
  LoadedCudaModule(const CudaDriver& driver, CudaModuleFile manifest, std::string where)
      : driver_(driver), manifest_(std::move(manifest)), where_(std::move(where)) {}

  const CudaDriver& driver_;
  CudaModuleFile manifest_;
  std::string where_;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;  // per manifest kernel
};

}  // namespace tessera

#endif  // TESSERA_CUDA_MODULE_H_
