// The settings of a tuning job that its user chooses, in one type with one validation: what
// `tessera tune` takes as flags (TuneOptions, tuner/tune.h, adds the in-process parts: the
// resolved target, threads, work dir, measuring), what `tessera submit` sends and the server
// stores of a job (JobSpec, server/job_store.h, adds the workloads, target text, priority,
// name). Both are a TuningSettings, so each passes its settings to the other by value; the
// proto's SubmitJobRequest maps onto it in proto/convert.h.
#ifndef TESSERA_TUNER_TUNE_OPTIONS_H_
#define TESSERA_TUNER_TUNE_OPTIONS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "ir/target.h"

namespace tessera {

struct TuningSettings {
  // The field names of the service (SubmitJobRequest, a stored job's JSON) are in quotes where
  // they differ; Validate's messages use them.
  int max_trials_global = 64;               // "max_trials": trials of the whole job; > 0
  int max_trials_per_task = 0;              // trials of each task; 0: max_trials_global
  int num_trials_per_iter = 64;             // "trials_per_iter": candidates per batch
  std::string strategy = "evolutionary";    // or "replay"
  std::string cost_model = "xgb";           // or "random"
  std::string task_scheduler = "gradient";  // or "round-robin"
  int64_t seed = 0;                         // of the search (and of a local run's input data)
  bool verify = true;                       // check each new best against the reference
  // After the search, time each task's fastest record against the default schedule's again,
  // side by side (tuner/runoff.h). `tessera tune` and `submit` turn it on unless told not to.
  bool runoff = false;
  // Parameters of default schedule rules by rule name (rules/registry.h DefaultScheduleRules),
  // e.g. {"MultiLevelTiling": {"pad_odd_extents": false}}; empty: every rule's defaults.
  nlohmann::json rule_params = nlohmann::json::object();

  // The per-task budget: max_trials_per_task, or max_trials_global when it is 0.
  int PerTaskBudget() const;

  // kInvalidArgument naming the first bad field ("max_trials_per_task: 9 is more than the job's
  // max_trials 8"): budgets, batch size (at most kMaxTrialsPerIter), strategy, cost model, task
  // scheduler, and rule_params, which must make `target`'s default rules (DefaultScheduleRules:
  // a rule name or parameter they do not have is an error).
  absl::Status Validate(const Target& target) const;
};

// The largest batch a job may ask for.
inline constexpr int kMaxTrialsPerIter = 4096;

// `rule_params` from its JSON text as a flag or a request carries it: empty means every rule's
// defaults (an empty object); text that is not JSON gives a discarded value, which Validate
// refuses ("rule_params: not a JSON object of rule names").
nlohmann::json RuleParamsFromText(const std::string& text);
// The other way: empty for every rule's defaults, else the object's JSON.
std::string RuleParamsText(const nlohmann::json& rule_params);

}  // namespace tessera

#endif  // TESSERA_TUNER_TUNE_OPTIONS_H_
