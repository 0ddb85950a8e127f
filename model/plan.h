// The runtime plan of a fused model: which function runs in which order on which memory, and
// the memory itself. Every non-view value has a storage: graph inputs and outputs their own,
// constants a slice of the weights blob, intermediates a slice of one arena (model/planner.h
// says how it is laid out). Views use their root's storage with their own shape.
//
// The plan is the "plan" of a compiled model's plan.json (model/compiled_model.h,
// docs/models.md); ExecutePlan runs it with any kernel caller (the compiled kernels of
// model/executor.h, or the interpreter for the reference). This file is part of the embeddable
// runtime: it depends on ir/ and abseil only, never on the frontend.
#ifndef TESSERA_MODEL_PLAN_H_
#define TESSERA_MODEL_PLAN_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ndarray.h"

namespace tessera {

enum class StorageKind : uint8_t { kInput, kOutput, kConstant, kIntermediate };

struct PlanStorage {
  StorageKind kind = StorageKind::kIntermediate;
  std::string name;  // the value's name
  int64_t bytes = 0;
  int64_t offset = 0;  // in the arena (intermediates) or the weights blob (constants)
};

struct PlanValue {
  int storage = -1;
  DataType dtype;
  std::vector<int64_t> shape;  // as the function's parameter sees it (rank 0 -> [1])
};

struct PlanCall {
  std::string function;  // the fused function's name
  int task = -1;         // index of its task (functions of one task share a kernel)
  std::vector<PlanValue> args;
};

struct ModelPlan {
  std::vector<PlanStorage> storages;
  std::vector<PlanCall> calls;
  std::vector<std::pair<std::string, PlanValue>> inputs, outputs;  // model order
  int64_t arena_bytes = 0;
  int64_t unshared_bytes = 0;  // what the intermediates would take without sharing
  int64_t weights_bytes = 0;
};

nlohmann::json PlanToJson(const ModelPlan& plan);
// kInvalidArgument naming the first missing or malformed field.
absl::StatusOr<ModelPlan> PlanFromJson(const nlohmann::json& json);

// Memory of one execution of a plan: inputs, outputs, arena, and the weights.
class PlanMemory {
 public:
  // kInvalidArgument when `weights` is not plan.weights_bytes long.
  static absl::StatusOr<PlanMemory> Create(const ModelPlan& plan, const std::string& weights);
  // kInvalidArgument naming the input on a dtype or shape mismatch.
  absl::Status SetInput(int index, const NDArray& value);
  // Pointers to the arguments of call `call`.
  std::vector<void*> Args(int call);
  // A copy of output `index`.
  NDArray Output(int index) const;
  // Output `index`'s bytes in this memory.
  const void* OutputData(int index) const;
  // The host bytes of storage `storage` (an intermediate's slice of the arena).
  void* StorageData(int storage);

 private:
  const ModelPlan* plan_ = nullptr;
  std::vector<NDArray> buffers_;  // per storage, arena storages left empty
  NDArray arena_;
};

// Calls kernel(call index, arguments) for every call in order; stops at the first error.
using KernelCaller = std::function<absl::Status(int call, const std::vector<void*>& args)>;
absl::Status ExecutePlan(const ModelPlan& plan, PlanMemory* memory, const KernelCaller& kernel);

}  // namespace tessera

#endif  // TESSERA_MODEL_PLAN_H_
