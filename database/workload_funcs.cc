#include "database/workload_funcs.h"

#include "absl/strings/str_cat.h"
#include "ir/serialize.h"

namespace tessera {

absl::StatusOr<PrimFunc> WorkloadFuncs::Load(int64_t id, const std::string& func_json) {
  auto it = funcs_.find(id);
  if (it != funcs_.end()) return it->second;
  absl::StatusOr<PrimFunc> func = LoadPrimFuncJson(func_json);
  if (!func.ok()) {
    return absl::DataLossError(
        absl::StrCat("database '", name_, "': workload ", id, ": ", func.status().message()));
  }
  funcs_.emplace(id, *func);
  return func;
}

}  // namespace tessera
