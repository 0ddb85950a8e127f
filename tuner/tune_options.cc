#include "tuner/tune_options.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "rules/registry.h"

namespace tessera {
namespace {

absl::Status SettingsField(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

}  // namespace

int TuningSettings::PerTaskBudget() const {
  return max_trials_per_task > 0 ? max_trials_per_task : max_trials_global;
}

absl::Status TuningSettings::Validate(const Target& target) const {
  if (max_trials_global <= 0) return SettingsField("max_trials", "the trial budget must be > 0");
  if (max_trials_per_task < 0) return SettingsField("max_trials_per_task", "must be >= 0");
  if (max_trials_per_task > max_trials_global) {
    return SettingsField("max_trials_per_task",
                         absl::StrCat(max_trials_per_task, " is more than the job's max_trials ",
                                      max_trials_global));
  }
  if (num_trials_per_iter <= 0 || num_trials_per_iter > kMaxTrialsPerIter) {
    return SettingsField("trials_per_iter",
                         absl::StrCat("must be in [1, ", kMaxTrialsPerIter, "]"));
  }
  if (strategy != "evolutionary" && strategy != "replay") {
    return SettingsField("strategy",
                         absl::StrCat("unknown strategy '", strategy, "' (evolutionary, replay)"));
  }
  if (cost_model != "xgb" && cost_model != "random") {
    return SettingsField("cost_model",
                         absl::StrCat("unknown cost model '", cost_model, "' (xgb, random)"));
  }
  if (task_scheduler != "gradient" && task_scheduler != "round-robin") {
    return SettingsField("task_scheduler", absl::StrCat("unknown task scheduler '", task_scheduler,
                                                        "' (gradient, round-robin)"));
  }
  if (!rule_params.is_object()) {
    return SettingsField("rule_params", "not a JSON object of rule names");
  }
  if (!rule_params.empty()) {
    // Made here once, so that a bad rule name or parameter fails the submission, not the job.
    absl::StatusOr<std::vector<ScheduleRulePtr>> rules = DefaultScheduleRules(target, rule_params);
    if (!rules.ok()) return SettingsField("rule_params", std::string(rules.status().message()));
  }
  return absl::OkStatus();
}

nlohmann::json RuleParamsFromText(const std::string& text) {
  if (text.empty()) return nlohmann::json::object();
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::string RuleParamsText(const nlohmann::json& rule_params) {
  if (rule_params.is_object() && rule_params.empty()) return "";
  return rule_params.dump();
}

}  // namespace tessera
