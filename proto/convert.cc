#include "proto/convert.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

absl::StatusOr<MeasureError> ErrorKindFromProto(const std::string& kind) {
  absl::StatusOr<MeasureError> error = ParseMeasureError(kind);
  if (!error.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("error_kind: ", error.status().message()));
  }
  return error;
}

}  // namespace

void ToProto(const Provenance& p, v1::Provenance* out) {
  out->set_tessera_version(p.tessera_version);
  out->set_compiler(p.compiler);
  out->set_device(p.device);
  out->set_driver(p.driver);
  out->set_worker_id(p.worker_id);
}

Provenance FromProto(const v1::Provenance& p) {
  Provenance out;
  out.tessera_version = p.tessera_version();
  out.compiler = p.compiler();
  out.device = p.device();
  out.driver = p.driver();
  out.worker_id = p.worker_id();
  return out;
}

void ToProto(const TuningRecord& r, const std::string& workload_hash, v1::Record* out) {
  out->set_id(r.id);
  out->set_workload_hash(workload_hash);
  out->set_target(r.target);
  out->set_trace_json(r.trace_json);
  for (double s : r.run_secs) out->add_run_seconds(s);
  out->set_error_kind(MeasureErrorName(r.error));
  out->set_error_msg(r.error_msg);
  out->set_verified(r.verified);
  out->set_timestamp(r.timestamp);
  ToProto(r.provenance, out->mutable_provenance());
  out->set_job_id(r.job_id);
  out->set_mean_seconds(r.ok() ? r.mean_secs() : 0);
  v1::StageSeconds* stages = out->mutable_stage_seconds();
  stages->set_build(r.stage_secs.build);
  stages->set_run(r.stage_secs.run);
  stages->set_verify(r.stage_secs.verify);
  stages->set_search(r.stage_secs.search);
  if (r.is_retiming()) out->set_retimes_record_id(r.retimes);
}

absl::StatusOr<TuningRecord> FromProto(const v1::Record& r) {
  TuningRecord out;
  absl::StatusOr<MeasureError> error = ErrorKindFromProto(r.error_kind());
  if (!error.ok()) return error.status();
  out.id = r.id();
  out.target = r.target();
  out.trace_json = r.trace_json();
  out.run_secs.assign(r.run_seconds().begin(), r.run_seconds().end());
  out.error = *error;
  out.error_msg = r.error_msg();
  out.verified = r.verified();
  out.timestamp = r.timestamp();
  out.provenance = FromProto(r.provenance());
  out.job_id = r.job_id();
  out.stage_secs.build = r.stage_seconds().build();
  out.stage_secs.run = r.stage_seconds().run();
  out.stage_secs.verify = r.stage_seconds().verify();
  out.stage_secs.search = r.stage_seconds().search();
  if (r.has_retimes_record_id()) out.retimes = r.retimes_record_id();
  return out;
}

void ToProto(const MeasureOutcome& o, v1::CandidateResult* out) {
  out->set_error_kind(MeasureErrorName(o.error));
  out->set_error_msg(o.error_msg);
  for (double s : o.run_secs) out->add_run_seconds(s);
  out->set_verified(o.verified);
  out->set_build_seconds(o.build_secs);
  out->set_run_wall_seconds(o.run_wall_secs);
  out->set_verify_seconds(o.verify_secs);
  for (double m : o.process_medians) out->add_process_median_seconds(m);
  out->set_disturbed(o.disturbed);
  out->set_others_busy_cores(o.others_busy_cores);
}

absl::StatusOr<MeasureOutcome> FromProto(const v1::CandidateResult& r) {
  MeasureOutcome out;
  absl::StatusOr<MeasureError> error = ErrorKindFromProto(r.error_kind());
  if (!error.ok()) return error.status();
  out.error = *error;
  out.error_msg = r.error_msg();
  if (out.error == MeasureError::kNone || out.error == MeasureError::kWrongOutput) {
    out.run_secs.assign(r.run_seconds().begin(), r.run_seconds().end());
  }
  out.verified = out.error == MeasureError::kNone && r.verified();
  out.build_secs = r.build_seconds();
  out.run_wall_secs = r.run_wall_seconds();
  out.verify_secs = r.verify_seconds();
  out.process_medians.assign(r.process_median_seconds().begin(), r.process_median_seconds().end());
  out.disturbed = r.disturbed();
  out.others_busy_cores = r.others_busy_cores();
  return out;
}

void ToProto(const RunnerConfig& runner, double build_timeout_sec, v1::RunnerSettings* out) {
  out->set_warmup(runner.warmup);
  out->set_number(runner.number);
  out->set_repeat(runner.repeat);
  out->set_min_repeat_ms(runner.min_repeat_ms);
  out->set_enable_cpu_cache_flush(runner.enable_cpu_cache_flush);
  out->set_timeout(runner.timeout_sec);
  out->set_build_timeout(build_timeout_sec);
}

MeasureConfig FromProto(const v1::RunnerSettings& s) {
  MeasureConfig c;
  c.runner.warmup = s.warmup() > 0 ? std::min(s.warmup(), 100) : 1;
  c.runner.number = s.number() > 0 ? std::min(s.number(), 100000) : 1;
  c.runner.repeat = s.repeat() > 0 ? std::min(s.repeat(), 100) : 3;
  c.runner.min_repeat_ms = std::clamp(s.min_repeat_ms(), 0, 10000);
  c.runner.enable_cpu_cache_flush = s.enable_cpu_cache_flush();
  c.runner.timeout_sec = s.timeout() > 0 ? std::min(s.timeout(), 3600.0) : 30;
  c.build_timeout_sec = s.build_timeout() > 0 ? std::min(s.build_timeout(), 3600.0) : 60;
  return c;
}

}  // namespace tessera
