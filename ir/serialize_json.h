// The nlohmann::json face of ir/serialize.h, for code that embeds IR documents inside larger
// JSON values (records, traces). Kept apart so that ir/serialize.h stays free of nlohmann.
#ifndef TESSERA_IR_SERIALIZE_JSON_H_
#define TESSERA_IR_SERIALIZE_JSON_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

// The document SaveJson(f) prints.
nlohmann::json ToJson(const PrimFunc& f);
nlohmann::json ToJson(const IRModule& m);

// The inverse of ToJson; same errors as LoadPrimFuncJson / LoadModuleJson.
absl::StatusOr<PrimFunc> PrimFuncFromJson(const nlohmann::json& j);
absl::StatusOr<IRModule> ModuleFromJson(const nlohmann::json& j);

}  // namespace tessera

#endif  // TESSERA_IR_SERIALIZE_JSON_H_
