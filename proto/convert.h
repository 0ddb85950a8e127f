// The one mapping between the tessera.v1 messages of measurements (proto/tessera.proto:
// Provenance, Record, CandidateResult, RunnerSettings) and Tessera's types (database/database.h,
// worker/measurer.h), each direction written once: the server's services and the worker daemon
// convert through it. A conversion from a message checks only what the types cannot hold (an
// unknown error kind), naming the field; bounds and lengths (what the service accepts from a
// worker) are the callers'. A job's settings (SubmitJobRequest <-> JobSpec) are mapped in
// server/job_spec_convert.h, above the tuner whose types they hold.
#ifndef TESSERA_PROTO_CONVERT_H_
#define TESSERA_PROTO_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "proto/tessera.pb.h"
#include "worker/measurer.h"

namespace tessera {

void ToProto(const Provenance& p, v1::Provenance* out);
Provenance FromProto(const v1::Provenance& p);

// A record as the API returns it; `workload_hash` is its workload's structural hash (the record
// holds only the database's workload id). mean_seconds is 0 for a record without a valid run.
void ToProto(const TuningRecord& r, const std::string& workload_hash, v1::Record* out);
// The other way (workload_id stays -1: a message names its workload by hash); kInvalidArgument
// "error_kind: ..." for an error kind MeasureErrorName does not give.
absl::StatusOr<TuningRecord> FromProto(const v1::Record& r);

// A measured outcome as a worker reports it (the result's candidate_id and log are the
// worker's to set); its provenance is the worker's registration, not part of the message.
void ToProto(const MeasureOutcome& o, v1::CandidateResult* out);
// The other way, keeping what the outcome's kind allows: run seconds only for a candidate that
// ran (no error, or a wrong output), verified only without an error. kInvalidArgument
// "error_kind: ..." for an unknown kind.
absl::StatusOr<MeasureOutcome> FromProto(const v1::CandidateResult& r);

// What a lease's candidates are measured with (WorkBatch.runner): the runner's settings and the
// build's time-out. The runner's seed travels as the batch's check_seed.
void ToProto(const RunnerConfig& runner, double build_timeout_sec, v1::RunnerSettings* out);
// The other way, as a worker measures with them: unset fields (0) take `tessera tune`'s defaults
// and the rest are clamped, so that a server cannot make a worker spin for hours on one
// candidate. The seed and the worker's own settings (build parallelism, work dir) are the
// caller's.
MeasureConfig FromProto(const v1::RunnerSettings& s);

}  // namespace tessera

#endif  // TESSERA_PROTO_CONVERT_H_
