// The builder and runner of a target's kind, chosen in one place: the host C compiler and the
// forking CPU runner for `cpu`, NVRTC and the CUDA driver runner for `cuda`
// (docs/cpu-backend.md, docs/cuda-backend.md). Used by LocalMeasurer, the checks and the
// commands that build and run candidates themselves (`tessera run|schedule|sample`).
#ifndef TESSERA_WORKER_BACKENDS_H_
#define TESSERA_WORKER_BACKENDS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ndarray.h"
#include "ir/target.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {

// What both builders take; everything else is each builder's default (CBuilderOptions,
// NvrtcBuilderOptions).
struct BackendBuildOptions {
  // Where sources and artifacts go; empty: a fresh temporary directory, removed with the builder.
  std::string work_dir;
  int parallelism = 0;      // concurrent compilations; <= 0: hardware threads
  double timeout_sec = 60;  // per compilation of the host compiler (NVRTC runs in-process)
};

// NewCBuilder for a cpu target, NewNvrtcBuilder for a cuda one.
std::unique_ptr<Builder> NewBuilder(const Target& target,
                                    const BackendBuildOptions& options = BackendBuildOptions());

// NewCpuRunner for a cpu target, NewCudaRunner for a cuda one.
std::unique_ptr<Runner> NewRunner(const Target& target);

// Runs one artifact of NewBuilder(target) on the caller's arrays (in parameter order) and leaves
// what the kernel wrote in them: RunCpuKernel for a cpu target, RunCudaKernel (GPU 0) for a
// cuda one, with their errors.
absl::StatusOr<RunResult> RunKernel(const Target& target, const BuildResult& built,
                                    std::vector<NDArray>* args, const RunnerConfig& config);

}  // namespace tessera

#endif  // TESSERA_WORKER_BACKENDS_H_
