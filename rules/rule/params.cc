// Validated reading of rule parameters.
#include "rules/rule/params.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

absl::StatusOr<RuleParams> RuleParams::Parse(const std::string& owner, const nlohmann::json& params,
                                             const std::vector<std::string>& known_keys) {
  if (params.is_null()) return RuleParams(owner, nlohmann::json::object());
  if (!params.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(owner, ": parameters must be a JSON object, got ", params.dump()));
  }
  for (const auto& item : params.items()) {
    if (std::find(known_keys.begin(), known_keys.end(), item.key()) == known_keys.end()) {
      std::string known = known_keys.empty() ? "none" : absl::StrJoin(known_keys, ", ");
      return absl::InvalidArgumentError(
          absl::StrCat(owner, ": unknown parameter '", item.key(), "' (known: ", known, ")"));
    }
  }
  return RuleParams(owner, params);
}

const nlohmann::json* RuleParams::Get(const std::string& key) const {
  auto it = params_.find(key);
  return it == params_.end() ? nullptr : &*it;
}

absl::Status RuleParams::Error(const std::string& key, const std::string& what) const {
  const nlohmann::json* value = Get(key);
  return absl::InvalidArgumentError(absl::StrCat(owner_, ": parameter '", key, "' ", what, ", got ",
                                                 value ? value->dump() : "nothing"));
}

absl::StatusOr<bool> RuleParams::Bool(const std::string& key, bool default_value) const {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return default_value;
  if (!value->is_boolean()) return Error(key, "must be a boolean");
  return value->get<bool>();
}

absl::StatusOr<int64_t> RuleParams::Int(const std::string& key, int64_t default_value) const {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return default_value;
  if (!value->is_number_integer()) return Error(key, "must be an integer");
  return value->get<int64_t>();
}

absl::StatusOr<std::vector<int64_t>> RuleParams::IntList(const std::string& key,
                                                         std::vector<int64_t> default_value) const {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return default_value;
  bool ok = value->is_array() && std::all_of(value->begin(), value->end(),
                                             [](const auto& v) { return v.is_number_integer(); });
  if (!ok) return Error(key, "must be a list of integers");
  return value->get<std::vector<int64_t>>();
}

absl::StatusOr<std::string> RuleParams::String(const std::string& key,
                                               std::string default_value) const {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return default_value;
  if (!value->is_string()) return Error(key, "must be a string");
  return value->get<std::string>();
}

absl::StatusOr<std::vector<std::string>> RuleParams::StringList(
    const std::string& key, std::vector<std::string> default_value) const {
  const nlohmann::json* value = Get(key);
  if (value == nullptr) return default_value;
  bool ok = value->is_array() &&
            std::all_of(value->begin(), value->end(), [](const auto& v) { return v.is_string(); });
  if (!ok) return Error(key, "must be a list of strings");
  return value->get<std::vector<std::string>>();
}

}  // namespace tessera
