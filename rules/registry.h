// Schedule rules and postprocessors by name, and the default lists per target
// (docs/reference/metaschedule.md §4.2; docs/design-spaces.md says where Tessera differs and why).
#ifndef TESSERA_RULES_REGISTRY_H_
#define TESSERA_RULES_REGISTRY_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "ir/target.h"
#include "rules/postproc.h"
#include "rules/schedule_rule.h"

namespace tessera {

// kNotFound for an unknown name (the message lists the known ones).
absl::StatusOr<ScheduleRulePtr> NewScheduleRule(
    const std::string& name, const Target& target,
    const nlohmann::json& params = nlohmann::json::object());
absl::StatusOr<PostprocPtr> NewPostproc(const std::string& name, const Target& target,
                                        const nlohmann::json& params = nlohmann::json::object());
std::vector<std::string> ScheduleRuleNames();
std::vector<std::string> PostprocNames();

// The default rules and postprocessors for the target's kind, in application order.
// `rule_params` (a JSON object) maps a default rule's name to the parameters it is made with,
// e.g. {"MultiLevelTiling": {"pad_odd_extents": false}}; rules it does not name keep their
// defaults. kInvalidArgument when it is not an object or names a rule not in the target's list.
absl::StatusOr<std::vector<ScheduleRulePtr>> DefaultScheduleRules(
    const Target& target, const nlohmann::json& rule_params = nlohmann::json::object());
absl::StatusOr<std::vector<PostprocPtr>> DefaultPostprocs(const Target& target);

}  // namespace tessera

#endif  // TESSERA_RULES_REGISTRY_H_
