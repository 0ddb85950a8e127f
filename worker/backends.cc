#include "worker/backends.h"

#include "worker/cuda_runner.h"
#include "worker/nvrtc_builder.h"

namespace tessera {

std::unique_ptr<Builder> NewBuilder(const Target& target, const BackendBuildOptions& options) {
  if (target.is_cuda()) {
    NvrtcBuilderOptions nvrtc;
    nvrtc.work_dir = options.work_dir;
    nvrtc.parallelism = options.parallelism;
    return NewNvrtcBuilder(nvrtc);
  }
  CBuilderOptions c;
  c.work_dir = options.work_dir;
  c.parallelism = options.parallelism;
  c.timeout_sec = options.timeout_sec;
  return NewCBuilder(c);
}

std::unique_ptr<Runner> NewRunner(const Target& target) {
  return target.is_cuda() ? NewCudaRunner() : NewCpuRunner();
}

absl::StatusOr<RunResult> RunKernel(const Target& target, const BuildResult& built,
                                    std::vector<NDArray>* args, const RunnerConfig& config) {
  if (target.is_cuda()) return RunCudaKernel(built.artifact_path, args, config);
  return RunCpuKernel(built.artifact_path, built.symbol, args, config);
}

}  // namespace tessera
