// Runners time built kernels. The CPU runner (NewCpuRunner) runs each kernel in a forked
// child process so that a crashing or hanging candidate cannot take the caller down:
//
//   parent: places the arguments in MAP_SHARED anonymous memory, forks, watches the child's
//           progress counter (a step that makes no progress for timeout_sec: SIGKILL,
//           "timed out after 2s"), reads the timings and outputs back.
//   child:  dlopen + dlsym the kernel, warm-up runs, `repeat` repeats of `number` runs each
//           (optionally flushing the CPU caches before each repeat), writes the per-repeat
//           seconds (total / number) into the shared memory, _exit. Steps (each bumps the
//           progress counter): loading plus the first warm-up run, every further warm-up
//           run, every repeat.
//
// A signal in the child becomes "kernel crashed: SIGSEGV (Segmentation fault)", a nonzero
// return value "kernel returned -1". Timing follows TVM's time_evaluator: when
// min_repeat_ms > 0, `number` grows until one repeat lasts at least that long.
//
// Slow candidates (slow_run_secs > 0): when the first warm-up run lasts at least
// slow_run_secs, that run is the only measurement (run_secs has one entry) and the repeats are
// skipped. A tuner sets it to a multiple of the best latency so far: a kernel 10x slower than
// the best is ranked just as well by one run, and the repeats would cost most of the run time.
//
// Fork constraint: the child inherits a copy of the parent's memory but only the forking
// thread. The kernels use OpenMP; libgomp's thread pool does not survive fork(), so the
// parent process must not have run OpenMP code itself (Tessera's measuring processes never
// do; keep OpenMP users such as XGBoost with nthread > 1 out of the process that measures, or
// expect a hang that the timeout turns into an error).
#ifndef TESSERA_WORKER_RUNNER_H_
#define TESSERA_WORKER_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/analysis.h"
#include "ir/dtype.h"
#include "ir/function.h"
#include "ir/ndarray.h"
#include "ir/target.h"

namespace tessera {

struct RunnerConfig {
  int warmup = 1;                       // untimed runs first
  int number = 1;                       // runs per repeat
  int repeat = 3;                       // timed repeats (one run_secs entry each)
  int min_repeat_ms = 0;                // grow `number` until a repeat lasts this long
  bool enable_cpu_cache_flush = false;  // write a buffer larger than the LLC before each repeat
  double timeout_sec = 30;              // per step (see above): load + first warm-up, a repeat
  double slow_run_secs = 0;             // > 0: a first warm-up run this long is the measurement
  uint64_t seed = 0;                    // of the random argument data
};

struct RunInput {
  std::string artifact_path;
  std::string symbol;
  std::vector<ArgInfo> args;
};

// What a measurement of `func`, built for `target` into `built`, runs: on the CPU, a function
// that packs layout-free weights (ir/prepack.h) is timed as its kernel on packed weights,
// `<symbol>_prepacked` (codegen/codegen_c.h), since a deployment packs them once; any other
// function as `built.symbol` with its own parameters.
RunInput TimedRunInput(const std::string& artifact_path, const std::string& symbol,
                       const PrimFunc& func, const Target& target);

struct RunResult {
  std::vector<double> run_secs;  // per repeat, seconds per run
  std::string error_msg;
  bool ok() const { return error_msg.empty(); }
};

class Runner {
 public:
  virtual ~Runner() = default;
  // One result per input, in order; the kernels run one at a time. Arguments are filled
  // with NDArray::FillRandom(Random(config.seed)), the same data for every input (the CPU
  // runner generates them once per distinct argument list and seed, and reuses them).
  virtual std::vector<RunResult> Run(const std::vector<RunInput>& inputs,
                                     const RunnerConfig& config) = 0;
};

std::unique_ptr<Runner> NewCpuRunner();

// Runs the kernel `symbol` of `artifact_path` on the caller's arrays (in parameter order)
// and leaves what the kernel wrote in them (the state after the last run). Failures of the
// kernel (load error, crash, timeout, nonzero return) are in RunResult::error_msg; the
// status is an error only for invalid arguments or when the child could not be set up.
absl::StatusOr<RunResult> RunCpuKernel(const std::string& artifact_path, const std::string& symbol,
                                       std::vector<NDArray>* args, const RunnerConfig& config);

}  // namespace tessera

#endif  // TESSERA_WORKER_RUNNER_H_
