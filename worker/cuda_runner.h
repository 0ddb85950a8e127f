// The CUDA runner times modules built by the NVRTC builder (a .cubin and its kernel manifest,
// cuda/module_file.h) on a GPU. The calling process never initializes CUDA; each batch
// of measurements runs in a forked child that does:
//
//   parent: reads every cubin and manifest (file errors become results without a child), maps
//           shared memory for the results, forks, and watches the child's progress counter;
//           when one measurement makes no progress for timeout_sec the child is SIGKILLed and
//           that measurement is "timed out after 10s".
//   child:  cuInit, retains the device's primary context, then per input: loads the module,
//           allocates one device buffer per argument, fills it with the seeded random data
//           (host NDArray -> cuMemcpyHtoD), launches the kernels in manifest order for the
//           warm-up runs and `repeat` repeats of `number` runs timed with CUDA events (with
//           config.enable_cpu_cache_flush, a cuMemsetD8 over twice the L2 size before each
//           repeat), writes the per-repeat seconds, frees everything, counts one more done.
//
// A launch failure or an illegal address is that input's error ("cuda runner: kernel
// main_kernel0: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"). Such
// errors are sticky (the context is unusable afterwards), so the child then exits and the
// parent starts a fresh child for the remaining inputs; a crash or hang costs only the input
// that caused it. Timing follows the CPU runner (TVM's time_evaluator, min_repeat_ms growth).
#ifndef TESSERA_WORKER_CUDA_RUNNER_H_
#define TESSERA_WORKER_CUDA_RUNNER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ndarray.h"
#include "worker/runner.h"

namespace tessera {

struct CudaRunnerOptions {
  int device = 0;  // CUDA device ordinal
};

// RunInput::artifact_path names the .cubin; RunInput::symbol is not used (the manifest lists
// the kernels). Without a driver or device every result says why ("no CUDA driver: ...",
// "no CUDA device: ..."), in a build without CUDA "cuda runner: tessera was built without
// CUDA".
std::unique_ptr<Runner> NewCudaRunner(CudaRunnerOptions options = {});

// Runs the module `cubin_path` on the caller's arrays (in parameter order) and copies every
// argument back from the device after the last run, as RunCpuKernel. Kernel failures (load
// error, launch error, illegal address, timeout) are in RunResult::error_msg; the status is an
// error for invalid arguments (kInvalidArgument: argument count or a size different from the
// kernels' parameters), an unreadable module (kNotFound / kInvalidArgument), a missing driver
// or device (kFailedPrecondition) or when the child could not be set up.
absl::StatusOr<RunResult> RunCudaKernel(const std::string& cubin_path, std::vector<NDArray>* args,
                                        const RunnerConfig& config, CudaRunnerOptions options = {});

}  // namespace tessera

#endif  // TESSERA_WORKER_CUDA_RUNNER_H_
