// A compiled model's directory (docs/models.md "Compile output"): plan.json, weights.bin,
// model.onnx and kernels/. This file holds the one reader and the one writer of plan.json:
// `tessera compile` (model/compile.h) writes it, the executor (model/executor.h) and with it
// `tessera exec` and the embeddable runtime read it. Part of the runtime (no frontend).
#ifndef TESSERA_MODEL_COMPILED_MODEL_H_
#define TESSERA_MODEL_COMPILED_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/plan.h"

namespace tessera {

inline constexpr char kCompiledModelFormat[] = "tessera-model-plan-1";

// How a kernel's function was scheduled: kind "tuned" (record, record_seconds), "default"
// (rule) or "unscheduled" (note: why, when it was meant to be scheduled).
struct KernelSchedule {
  std::string kind = "unscheduled";
  int64_t record = -1;
  double record_seconds = 0;
  std::string rule;
  std::string note;
};

// "tuned record 3", "tuned record 3 (the default schedule, which tuning did not beat)",
// "default rule CpuDefault", "default rule CpuDefault (tuned record 3 ran slower: ...)",
// "unscheduled" or "unscheduled (the scheduled function did not build)": how compile's output
// and warnings name a kernel's path.
std::string DescribeSchedule(const KernelSchedule& schedule);

// A kernel that packs its layout-free weights (docs/models.md): `symbol` packs them once per
// call site, `kernel_symbol` runs on the packed weights. An argument is an index into the
// call's arguments, or -1 - p for packed buffer p.
struct KernelPrepack {
  std::string symbol;
  std::vector<int> args;
  std::string kernel_symbol;
  std::vector<int> kernel_args;
  std::vector<int64_t> packed_bytes;
};

struct CompiledKernel {
  std::string task;
  int weight = 1;
  double flops = 0;
  std::string structural_hash;
  KernelSchedule schedule;
  std::string artifact;  // the shared object, relative to the model's directory
  std::string symbol;    // C ABI `int32_t f(void** args)`, the whole function
  std::optional<KernelPrepack> prepack;
};

struct CompiledModel {
  std::string model = "model.onnx";  // the copy of the source model, relative to the directory
  std::string target;
  // The shapes the model was imported with (`--input-shape`); `exec --check` re-imports with them.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::vector<CompiledKernel> kernels;  // one per task, plan calls index them
  ModelPlan plan;
};

// Writes `dir`/plan.json. kInternal naming the file when it cannot be written.
absl::Status WriteCompiledModel(const std::string& dir, const CompiledModel& model);

// Reads `dir`/plan.json. kNotFound when it cannot be read ("cannot read DIR/plan.json");
// kInvalidArgument naming the file when it is not a plan of this format, a field is missing or
// malformed, or a call names no kernel.
absl::StatusOr<CompiledModel> ReadCompiledModel(const std::string& dir);

}  // namespace tessera

#endif  // TESSERA_MODEL_COMPILED_MODEL_H_
