// Compiling a loaded model (`tessera compile`, docs/models.md "Compile output"): every task is
// scheduled with its best verified record (ApplyBest), the others with the default rules
// (ApplyDefaultSchedule); one kernel per task is built with the C builder (cpu) or NVRTC (cuda:
// a cubin and its launch manifest), each tuned cpu kernel is timed against its default
// schedule in the model and the faster kept, and the directory gets plan.json
// (model/compiled_model.h), weights.bin, model.onnx and kernels/.
#ifndef TESSERA_MODEL_COMPILE_H_
#define TESSERA_MODEL_COMPILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/target.h"
#include "model/compiled_model.h"
#include "model/load.h"

namespace tessera {

struct ModelCompileOptions {
  Target target;                 // cpu, or cuda with its -arch (no GPU needed to compile)
  Database* database = nullptr;  // tuned records; none: default schedules only
  bool apply_defaults = true;    // false leaves tasks without a record unscheduled
  InputShapes input_shapes;      // what `model` was loaded with, recorded for `exec --check`
  // Time each tuned kernel against its default schedule inside the model and keep the faster
  // (model/kernel_runoff.h): a record was timed on its own, and a model's tuned kernels must
  // never make it slower than its defaults.
  bool runoff = true;
};

struct ModelCompileResult {
  CompiledModel compiled;
  // One per task whose scheduled function did not build (a bug elsewhere): that task falls back
  // to its unscheduled function, so a model always compiles.
  std::vector<std::string> warnings;
};

// Compiles `model` (loaded fused) into `out_dir` (created if missing). Errors of ApplyBest and
// ApplyDefaultSchedule; kInternal naming the path when the directory or a file cannot be
// written, the unscheduled fallback fails to build (cpu), or naming the task whose scheduled
// function does not build (cuda, which has no unscheduled fallback).
absl::StatusOr<ModelCompileResult> CompileModel(const LoadedModel& model,
                                                const std::string& out_dir,
                                                const ModelCompileOptions& options);

}  // namespace tessera

#endif  // TESSERA_MODEL_COMPILE_H_
