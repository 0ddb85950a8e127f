// Runs a compiled model's plan on a GPU (a model compiled for a cuda target, docs/models.md
// "On a GPU"): the executor (model/executor.h) hands its cuda models to it. At load it retains
// the device's primary context, loads every task's module (cuda/module.h), allocates device
// memory mirroring the plan's storages (the arena in one allocation, each input, output and
// constant in its own) and copies the weights over once. A run copies the inputs from the
// host memory in, launches every call in plan order on the default stream, and copies the
// outputs back into the host memory, so that the executor's SetInput and Output work as on the
// cpu. Part of the runtime: in a build without CUDA, Create says so.
#ifndef TESSERA_MODEL_CUDA_PLAN_RUNNER_H_
#define TESSERA_MODEL_CUDA_PLAN_RUNNER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/compiled_model.h"
#include "model/plan.h"

namespace tessera {

class CudaPlanRunner {
 public:
  // `model` must outlive the runner; `dir` holds its kernels (each artifact a .cubin with its
  // manifest beside it), `memory` the plan's host memory with the weights in it. Errors:
  // kFailedPrecondition "no CUDA driver: ..." / "no CUDA device: ..." / "built without CUDA";
  // kNotFound or kInvalidArgument naming a missing or malformed cubin or manifest; kInternal
  // for a module that does not load or memory that cannot be allocated.
  static absl::StatusOr<std::unique_ptr<CudaPlanRunner>> Create(const CompiledModel& model,
                                                                const std::string& dir,
                                                                PlanMemory* memory, int device);
  ~CudaPlanRunner();
  CudaPlanRunner(const CudaPlanRunner&) = delete;
  CudaPlanRunner& operator=(const CudaPlanRunner&) = delete;

  // Inputs from `memory` to the device, every call, outputs back into `memory`. With
  // `call_seconds` (one entry per call), each call is timed with CUDA events (and the calls
  // synchronized one by one); without, the device is synchronized once at the end. kInternal
  // naming the function whose kernel failed (or "running the model" when they ran unsynchronized).
  absl::Status Run(PlanMemory* memory, std::vector<double>* call_seconds);

 private:
  struct State;
  explicit CudaPlanRunner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// True for a compiled model's target string of a GPU ("cuda -arch=sm_90 ...").
bool IsCudaTargetString(const std::string& target);

}  // namespace tessera

#endif  // TESSERA_MODEL_CUDA_PLAN_RUNNER_H_
