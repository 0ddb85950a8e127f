#include "server/job_spec_convert.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<JobSpec> JobSpecFromProto(const v1::SubmitJobRequest& request) {
  JobSpec spec;
  spec.workloads.assign(request.workloads().begin(), request.workloads().end());
  for (size_t i = 0; i < spec.workloads.size(); ++i) {
    if (spec.workloads[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("workloads[", i, "]: empty"));
    }
  }
  spec.target = request.target();
  spec.max_trials_global = request.max_trials();
  spec.max_trials_per_task = request.max_trials_per_task();
  if (request.trials_per_iter() != 0) spec.num_trials_per_iter = request.trials_per_iter();
  if (!request.strategy().empty()) spec.strategy = request.strategy();
  if (!request.cost_model().empty()) spec.cost_model = request.cost_model();
  if (!request.task_scheduler().empty()) spec.task_scheduler = request.task_scheduler();
  spec.seed = request.seed();
  if (request.has_verify() && request.verify() && request.skip_verify()) {
    return absl::InvalidArgumentError(
        "verify: true beside skip_verify true (skip_verify is its old name: send verify alone)");
  }
  spec.verify = request.has_verify() ? request.verify() : !request.skip_verify();
  spec.runoff = !request.has_runoff() || request.runoff();
  spec.rule_params = RuleParamsFromText(request.rule_params());
  spec.priority = request.priority();
  spec.name = request.name();
  return spec;
}

void ToProto(const JobSpec& spec, v1::SubmitJobRequest* request) {
  request->clear_workloads();
  for (const std::string& w : spec.workloads) request->add_workloads(w);
  request->set_target(spec.target);
  request->set_max_trials(spec.max_trials_global);
  request->set_max_trials_per_task(spec.max_trials_per_task);
  request->set_trials_per_iter(spec.num_trials_per_iter);
  request->set_strategy(spec.strategy);
  request->set_cost_model(spec.cost_model);
  request->set_task_scheduler(spec.task_scheduler);
  request->set_seed(spec.seed);
  request->set_verify(spec.verify);
  request->clear_skip_verify();
  request->set_runoff(spec.runoff);
  request->set_rule_params(RuleParamsText(spec.rule_params));
  request->set_priority(spec.priority);
  request->set_name(spec.name);
}

}  // namespace tessera
