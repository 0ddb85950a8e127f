// Runs a compiled model in this process: loads its kernels (dlopen), packs the weights of every
// call whose kernel has `prepack` once at load (as a deployment does), and then runs the plan
// on inputs as often as asked. A model compiled for a cuda target runs on the GPU through
// model/cuda_plan_runner.h, with the same interface (inputs and outputs in host memory). The
// embeddable runtime (model/c_api.h), `tessera exec` and the naive reference of `exec --check`
// (model/reference.h) all run models with it. Part of the runtime: plan, compiled-model reader and
// dlopen only.
//
// Kernels run in the calling thread (they fork OpenMP threads themselves), never in a child
// process: a whole model is a sequence of trusted, already checked kernels, and a fork per call
// would dominate microsecond-scale kernels. An Executor is not safe for concurrent Run calls
// (one memory per executor); load one per thread instead, which shares the loaded kernels.
#ifndef TESSERA_MODEL_EXECUTOR_H_
#define TESSERA_MODEL_EXECUTOR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ndarray.h"
#include "model/compiled_model.h"
#include "model/cpu_share.h"
#include "model/cuda_plan_runner.h"
#include "model/plan.h"

namespace tessera {

struct ExecutorOptions {
  // OpenMP threads of the kernels' parallel loops, set for the thread calling Run (through the
  // kernels' own OpenMP runtime, omp_set_num_threads). 0: the cores this process may run on
  // (at most OMP_NUM_THREADS) less those other processes keep busy, read again before a run at
  // most every 0.2 s (model/cpu_share.h).
  int num_threads = 0;
  // The GPU a model compiled for a cuda target runs on (its ordinal).
  int cuda_device = 0;
};

class Executor {
 public:
  // Loads the directory written by `tessera compile`: plan.json, weights.bin and the kernels.
  // Errors as ReadCompiledModel; kNotFound for a missing weights.bin; kInvalidArgument when it
  // does not fit the plan or a prepack argument is out of range; kInternal naming the file for
  // a kernel that cannot be loaded or lacks its symbol, or a packing that fails; for a cuda
  // model those of CudaPlanRunner::Create (kFailedPrecondition without a GPU).
  static absl::StatusOr<std::unique_ptr<Executor>> Load(const std::string& dir,
                                                        const ExecutorOptions& options = {});
  // The same for a compiled model in memory: its artifacts are relative to `dir` (or absolute),
  // `weights` is its weights blob.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(CompiledModel model,
                                                          const std::string& dir,
                                                          const std::string& weights,
                                                          const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const CompiledModel& model() const { return model_; }
  const ModelPlan& plan() const { return model_.plan; }

  // Copies input `index` (model order) in. kInvalidArgument naming the input on a dtype or
  // size mismatch, or an index out of range.
  absl::Status SetInput(int index, const NDArray& value);
  // Runs every call in order. With `call_seconds` (one entry per call), each call's wall time
  // is written there. kInternal naming the function when a kernel returns non-zero.
  absl::Status Run(std::vector<double>* call_seconds = nullptr);
  // A copy of output `index` (model order), as of the last Run.
  NDArray Output(int index) const { return memory_.Output(index); }
  // Output `index`'s bytes as of the last Run, valid until the next Run (the C API copies
  // them into the caller's buffer without an NDArray in between).
  const void* OutputData(int index) const { return memory_.OutputData(index); }

  // The calls whose weights were packed at load, and the time that took.
  int packed_calls() const { return packed_calls_; }
  double packing_seconds() const { return packing_seconds_; }

 private:
  using KernelFn = int32_t (*)(void**);
  struct Kernel {
    KernelFn whole = nullptr;   // the kernel on plain weights
    KernelFn pack = nullptr;    // with prepack: packs the weights
    KernelFn packed = nullptr;  // with prepack: the kernel on packed weights
  };
  struct AlignedFree {
    void operator()(void* p) const;
  };

  Executor() = default;
  absl::Status LoadKernels(const std::string& dir);
  absl::Status PackWeights();
  // A split kernel's arguments: the call's own, or its packed buffers.
  absl::StatusOr<std::vector<void*>> SplitArgs(int call, const std::vector<int>& which,
                                               const std::vector<void*>& args);

  CompiledModel model_;
  PlanMemory memory_;
  ExecutorOptions options_;
  std::vector<void*> handles_;   // dlopen handles, closed with the executor
  std::vector<Kernel> kernels_;  // per task
  std::vector<std::vector<std::unique_ptr<void, AlignedFree>>> packed_;  // per call
  void (*omp_set_num_threads_)(int) = nullptr;
  std::unique_ptr<CpuShare> cpu_share_;  // with num_threads 0
  std::unique_ptr<CudaPlanRunner> cuda_;  // a cuda model's, which then has no kernels_
  int packed_calls_ = 0;
  double packing_seconds_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_MODEL_EXECUTOR_H_
