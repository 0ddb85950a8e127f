// Reading the JSON parameters of a schedule rule, postprocessor or mutator with validation:
// the parameters must be an object (null means no parameters), every key must be known to
// the owner, and each value must have the type asked for. Errors are kInvalidArgument and
// name the owner and the key, e.g. "AutoInline: parameter 'disallow_op' must be a list of
// strings, got 3".
#ifndef TESSERA_RULES_RULE_PARAMS_H_
#define TESSERA_RULES_RULE_PARAMS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

class RuleParams {
 public:
  // kInvalidArgument if `params` is neither an object nor null, or has a key not in
  // `known_keys` (the message lists the known keys).
  static absl::StatusOr<RuleParams> Parse(const std::string& owner, const nlohmann::json& params,
                                          const std::vector<std::string>& known_keys);

  // The value of `key`, or `default_value` when the key is absent. kInvalidArgument when
  // present with another type (Int accepts only integral numbers; IntList and StringList only
  // arrays of those).
  absl::StatusOr<bool> Bool(const std::string& key, bool default_value) const;
  absl::StatusOr<int64_t> Int(const std::string& key, int64_t default_value) const;
  absl::StatusOr<std::vector<int64_t>> IntList(const std::string& key,
                                               std::vector<int64_t> default_value) const;
  absl::StatusOr<std::string> String(const std::string& key, std::string default_value) const;
  absl::StatusOr<std::vector<std::string>> StringList(const std::string& key,
                                                      std::vector<std::string> default_value) const;
  // The raw value of `key`, or nullptr when absent (for structured values).
  const nlohmann::json* Get(const std::string& key) const;

  // kInvalidArgument "<owner>: parameter '<key>' <what>, got <value>" (for checks beyond
  // the type, e.g. ranges).
  absl::Status Error(const std::string& key, const std::string& what) const;

 private:
  RuleParams(std::string owner, nlohmann::json params)
      : owner_(std::move(owner)), params_(std::move(params)) {}

  std::string owner_;
  nlohmann::json params_;
};

}  // namespace tessera

#endif  // TESSERA_RULES_RULE_PARAMS_H_
