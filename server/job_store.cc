#include "server/job_store.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "database/database.h"
#include "database/record_json.h"

namespace tessera {
namespace {

using json = nlohmann::json;

}  // namespace

int ExpiredLeases::candidates() const {
  int n = requeued;
  for (const auto& [target, count] : quarantined) n += count;
  return n;
}

std::string ReportedOutcomeToJson(const ReportedOutcome& r) {
  json j;
  j["error"] = MeasureErrorName(r.outcome.error);
  j["error_msg"] = r.outcome.error_msg;
  j["run_secs"] = RunSecsToJson(r.outcome.run_secs);
  j["verified"] = r.outcome.verified;
  j["build_secs"] = r.outcome.build_secs;
  j["run_wall_secs"] = r.outcome.run_wall_secs;
  j["verify_secs"] = r.outcome.verify_secs;
  j["process_medians"] = RunSecsToJson(r.outcome.process_medians);
  j["disturbed"] = r.outcome.disturbed;
  j["others_busy_cores"] = r.outcome.others_busy_cores;
  j["provenance"] = ProvenanceToJson(r.provenance);
  j["worker_id"] = r.provenance.worker_id;
  return j.dump();
}

absl::StatusOr<ReportedOutcome> ReportedOutcomeFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::DataLossError("state database: malformed candidate result");
  ReportedOutcome r;
  TESSERA_ASSIGN_OR_RETURN(r.outcome.error, ParseMeasureError(j.value("error", "")));
  r.outcome.error_msg = j.value("error_msg", "");
  if (j.contains("run_secs")) {
    TESSERA_ASSIGN_OR_RETURN(r.outcome.run_secs, RunSecsFromJson(j["run_secs"]));
  }
  r.outcome.verified = j.value("verified", false);
  r.outcome.build_secs = j.value("build_secs", 0.0);
  r.outcome.run_wall_secs = j.value("run_wall_secs", 0.0);
  r.outcome.verify_secs = j.value("verify_secs", 0.0);
  if (j.contains("process_medians")) {
    TESSERA_ASSIGN_OR_RETURN(r.outcome.process_medians, RunSecsFromJson(j["process_medians"]));
  }
  r.outcome.disturbed = j.value("disturbed", false);
  r.outcome.others_busy_cores = j.value("others_busy_cores", 0.0);
  if (j.contains("provenance")) {
    TESSERA_ASSIGN_OR_RETURN(r.provenance, ProvenanceFromJson(j["provenance"]));
  }
  r.provenance.worker_id = j.value("worker_id", r.provenance.worker_id);
  return r;
}

std::string JobSpec::ToJson() const {
  json j;
  j["workloads"] = workloads;
  j["target"] = target;
  j["max_trials"] = max_trials_global;
  j["max_trials_per_task"] = max_trials_per_task;
  j["trials_per_iter"] = num_trials_per_iter;
  j["strategy"] = strategy;
  j["cost_model"] = cost_model;
  j["task_scheduler"] = task_scheduler;
  j["seed"] = seed;
  j["priority"] = priority;
  j["verify"] = verify;
  j["runoff"] = runoff;
  j["name"] = name;
  // The JSON text, as SubmitJobRequest.rule_params carries it.
  if (const std::string text = RuleParamsText(rule_params); !text.empty()) j["rule_params"] = text;
  if (!model.empty()) {
    j["model"] = model;
    j["weights"] = weights;
  }
  return j.dump();
}

absl::StatusOr<JobSpec> JobSpec::FromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("workloads") || !j["workloads"].is_array()) {
    return absl::DataLossError("state database: malformed job spec");
  }
  JobSpec s;
  try {
    s.workloads = j["workloads"].get<std::vector<std::string>>();
    s.target = j.value("target", "");
    s.max_trials_global = j.value("max_trials", 0);
    s.max_trials_per_task = j.value("max_trials_per_task", 0);
    s.num_trials_per_iter = j.value("trials_per_iter", 64);
    s.strategy = j.value("strategy", s.strategy);
    s.cost_model = j.value("cost_model", s.cost_model);
    s.task_scheduler = j.value("task_scheduler", s.task_scheduler);
    s.seed = j.value("seed", int64_t{0});
    s.priority = j.value("priority", 0);
    s.verify = j.value("verify", true);
    s.runoff = j.value("runoff", false);
    s.name = j.value("name", "");
    s.rule_params = RuleParamsFromText(j.value("rule_params", ""));
    s.model = j.value("model", "");
    if (j.contains("weights")) s.weights = j["weights"].get<std::vector<double>>();
  } catch (const json::exception& e) {
    return absl::DataLossError(absl::StrCat("state database: malformed job spec: ", e.what()));
  }
  return s;
}

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  if (IsPostgresUrl(path)) return OpenPostgresJobStore(path);
  return OpenSqliteJobStore(path);
}

}  // namespace tessera
