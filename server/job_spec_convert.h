// The mapping between SubmitJobRequest (proto/tessera.proto) and the job it asks for (JobSpec,
// server/job_store.h: the job's TuningSettings and what the service adds), both ways, written
// once: the server's SubmitJob reads requests with it and `tessera submit` writes them. Unset
// request fields keep TuningSettings' defaults (max_trials_per_task 0 and trials_per_iter 0 mean
// the default, as do empty names; `verify` and `runoff` absent mean true). Nothing is validated
// here beyond what the message cannot say by itself: TuningSettings::Validate and the job
// manager's limits check the result.
#ifndef TESSERA_SERVER_JOB_SPEC_CONVERT_H_
#define TESSERA_SERVER_JOB_SPEC_CONVERT_H_

#include "absl/status/statusor.h"
#include "proto/tessera.pb.h"
#include "server/job_store.h"

namespace tessera {

// The job a request asks for, without its model fields (model, model_name, input_shapes: the
// job manager imports a model). kInvalidArgument naming the field for an empty workload
// ("workloads[1]: empty") and for `verify` true beside the deprecated skip_verify.
absl::StatusOr<JobSpec> JobSpecFromProto(const v1::SubmitJobRequest& request);

// Sets the request's workloads, target, settings, priority and name from `spec`; its model
// fields are left as they are.
void ToProto(const JobSpec& spec, v1::SubmitJobRequest* request);

}  // namespace tessera

#endif  // TESSERA_SERVER_JOB_SPEC_CONVERT_H_
