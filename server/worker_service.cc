#include "server/worker_service.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/target.h"
#include "proto/convert.h"
#include "server/status_convert.h"

namespace tessera {
namespace {

constexpr int kMaxDevices = 64;
constexpr int kMaxLeaseIds = 1024;
constexpr int kMaxCandidates = 1024;
constexpr int kMaxResults = 4096;
constexpr int kMaxRepeats = 10000;
constexpr size_t kMaxStringField = 64 * 1024;  // error messages and logs are cut to this
constexpr size_t kMaxIdLength = 256;

grpc::Status InvalidField(const std::string& field, const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(field, ": ", message));
}

bool FiniteNonNegative(double v) { return std::isfinite(v) && v >= 0; }

// What a worker says of its device and software becomes the provenance of every record it
// measures, which ImportRecords checks (database/record_json.h CheckImportedRecord): at most
// this many bytes, no control characters.
constexpr size_t kMaxProvenanceField = 1024;

grpc::Status CheckProvenanceText(const std::string& field, const std::string& value) {
  if (value.size() > kMaxProvenanceField) {
    return InvalidField(field, absl::StrCat("longer than ", kMaxProvenanceField, " bytes"));
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return InvalidField(field, "holds a control character");
  }
  return grpc::Status::OK;
}

std::string Cut(const std::string& s) {
  return s.size() <= kMaxStringField ? s : s.substr(0, kMaxStringField) + "...";
}

#define TESSERA_CHECK_WORKER_SCOPE(context)                        \
  do {                                                             \
    absl::Status _auth = auth_->Check(*(context), Scope::kWorker); \
    if (!_auth.ok()) return ToGrpcStatus(_auth);                   \
  } while (0)

grpc::Status CheckId(const std::string& field, const std::string& value) {
  if (value.empty()) return InvalidField(field, "empty");
  if (value.size() > kMaxIdLength) return InvalidField(field, "too long");
  return grpc::Status::OK;
}

}  // namespace

std::string CandidateIdString(int64_t id) { return absl::StrCat("cand-", id); }

std::optional<int64_t> ParseCandidateId(const std::string& text) {
  int64_t id;
  if (!absl::StartsWith(text, "cand-") || !absl::SimpleAtoi(text.substr(5), &id) || id <= 0) {
    return std::nullopt;
  }
  return id;
}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext* context,
                                               const v1::RegisterWorkerRequest* request,
                                               v1::RegisterWorkerResponse* response) {
  TESSERA_CHECK_WORKER_SCOPE(context);
  if (request->host().size() > kMaxIdLength) return InvalidField("host", "too long");
  if (request->devices_size() == 0) return InvalidField("devices", "register at least one device");
  if (request->devices_size() > kMaxDevices) {
    return InvalidField("devices", absl::StrCat("at most ", kMaxDevices));
  }
  if (request->build_parallelism() < 0) return InvalidField("build_parallelism", "must be >= 0");
  WorkerInfo info;
  info.host = request->host();
  info.build_parallelism = request->build_parallelism();
  for (int i = 0; i < request->devices_size(); ++i) {
    const v1::DeviceInfo& d = request->devices(i);
    std::string field = absl::StrCat("devices[", i, "].target");
    if (d.target().empty()) return InvalidField(field, "empty");
    absl::StatusOr<Target> target = Target::Parse(d.target());
    if (!target.ok()) return InvalidField(field, std::string(target.status().message()));
    if (d.memory_bytes() < 0)
      return InvalidField(absl::StrCat("devices[", i, "].memory_bytes"), "< 0");
    const std::string canonical = target->ToString();
    const TargetPermission permission = auth_->PermitTarget(*context, canonical);
    if (!permission.allowed) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat(field, ": this worker token may not serve ", canonical,
                                       " (the targets a token allows are named in its line of "
                                       "--worker-token-file)"));
    }
    info.devices.push_back(
        DeviceSpec{canonical, Cut(d.name()), d.memory_bytes(), d.ordinal(), permission.verified});
  }
  const v1::Provenance& p = request->software();
  for (int i = 0; i < request->devices_size(); ++i) {
    grpc::Status s =
        CheckProvenanceText(absl::StrCat("devices[", i, "].name"), request->devices(i).name());
    if (!s.ok()) return s;
  }
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{
                                         "software.tessera_version", &p.tessera_version()},
                                     {"software.compiler", &p.compiler()},
                                     {"software.device", &p.device()},
                                     {"software.driver", &p.driver()}}) {
    grpc::Status s = CheckProvenanceText(field, *value);
    if (!s.ok()) return s;
  }
  info.software = FromProto(p);
  info.software.worker_id.clear();  // the dispatcher's to assign
  info.software.tessera_version = Cut(info.software.tessera_version);
  info.software.compiler = Cut(info.software.compiler);
  info.software.device = Cut(p.device().empty() ? request->devices(0).name() : p.device());
  info.software.driver = Cut(info.software.driver);
  absl::StatusOr<std::string> id = dispatcher_->workers().Register(std::move(info));
  if (!id.ok()) return ToGrpcStatus(id.status());
  response->set_worker_id(*id);
  response->set_heartbeat_interval(dispatcher_->options().heartbeat_interval);
  response->set_lease_seconds(dispatcher_->options().lease_seconds);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* context,
                                          const v1::HeartbeatRequest* request,
                                          v1::HeartbeatResponse* response) {
  TESSERA_CHECK_WORKER_SCOPE(context);
  if (grpc::Status s = CheckId("worker_id", request->worker_id()); !s.ok()) return s;
  if (request->lease_ids_size() > kMaxLeaseIds) {
    return InvalidField("lease_ids", absl::StrCat("at most ", kMaxLeaseIds));
  }
  std::vector<std::string> leases(request->lease_ids().begin(), request->lease_ids().end());
  HeartbeatReply reply = dispatcher_->Heartbeat(request->worker_id(), leases);
  response->set_known(reply.known);
  for (const std::string& id : reply.revoked) response->add_revoked_lease_ids(id);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::PullWork(grpc::ServerContext* context,
                                         const v1::PullWorkRequest* request,
                                         v1::PullWorkResponse* response) {
  TESSERA_CHECK_WORKER_SCOPE(context);
  if (grpc::Status s = CheckId("worker_id", request->worker_id()); !s.ok()) return s;
  if (request->max_candidates() < 0 || request->max_candidates() > kMaxCandidates) {
    return InvalidField("max_candidates", absl::StrCat("must be in [0, ", kMaxCandidates, "]"));
  }
  if (!FiniteNonNegative(request->wait_seconds())) {
    return InvalidField("wait_seconds", "must be finite and >= 0");
  }
  // Answer before the caller's deadline, or the lease would go to a worker no longer waiting.
  double wait = request->wait_seconds();
  auto deadline = context->deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    double left =
        std::chrono::duration<double>(deadline - std::chrono::system_clock::now()).count();
    wait = std::min(wait, std::max(0.0, left - 1.0));
  }
  absl::StatusOr<std::optional<Lease>> lease =
      dispatcher_->PullWork(request->worker_id(), request->max_candidates(), wait);
  if (!lease.ok()) return ToGrpcStatus(lease.status());
  if (!lease->has_value()) {
    response->set_has_work(false);
    return grpc::Status::OK;
  }
  const Lease& l = **lease;
  if (context->IsCancelled()) {
    // The worker hung up while waiting: the lease would only expire and count an attempt.
    dispatcher_->ReturnLease(l.id);
    return grpc::Status(grpc::StatusCode::CANCELLED, "the worker hung up");
  }
  response->set_has_work(true);
  v1::WorkBatch* batch = response->mutable_batch();
  batch->set_lease_id(l.id);
  batch->set_lease_deadline(l.deadline);
  batch->set_target(l.context.target);
  batch->set_workload_json(l.context.workload_json);
  for (const LeasedCandidate& c : l.candidates) {
    v1::Candidate* out = batch->add_candidates();
    out->set_candidate_id(CandidateIdString(c.candidate_id));
    out->set_func_json(c.func_json);
    out->set_hash(c.hash);
  }
  ToProto(l.context.runner, l.context.build_timeout_sec, batch->mutable_runner());
  batch->set_best_seconds(l.context.best_secs);
  batch->set_verify(l.context.verify);
  batch->set_check_seed(l.context.check_seed);
  batch->set_measure_fully(l.context.measure_fully);
  for (const std::string& hash : l.context.check_always_hashes) {
    batch->add_check_always_hashes(hash);
  }
  batch->set_job_id(l.job_id);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::ReportResults(grpc::ServerContext* context,
                                              const v1::ReportResultsRequest* request,
                                              v1::ReportResultsResponse* response) {
  TESSERA_CHECK_WORKER_SCOPE(context);
  if (grpc::Status s = CheckId("worker_id", request->worker_id()); !s.ok()) return s;
  if (grpc::Status s = CheckId("lease_id", request->lease_id()); !s.ok()) return s;
  if (request->results_size() > kMaxResults) {
    return InvalidField("results", absl::StrCat("at most ", kMaxResults));
  }
  // Every result is checked before any is accepted.
  std::vector<CandidateReport> reports;
  for (int i = 0; i < request->results_size(); ++i) {
    const v1::CandidateResult& r = request->results(i);
    std::string field = absl::StrCat("results[", i, "]");
    std::optional<int64_t> id = ParseCandidateId(r.candidate_id());
    if (!id.has_value()) {
      return InvalidField(field + ".candidate_id",
                          absl::StrCat("not a candidate id: '", Cut(r.candidate_id()), "'"));
    }
    absl::StatusOr<MeasureOutcome> outcome = FromProto(r);
    if (!outcome.ok()) {  // "error_kind: ..."
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat(field, ".", outcome.status().message()));
    }
    const MeasureError kind = outcome->error;
    if (kind == MeasureError::kWorkerLost) {
      return InvalidField(field + ".error_kind", "worker_lost is the server's to give");
    }
    if (r.run_seconds_size() > kMaxRepeats) {
      return InvalidField(field + ".run_seconds",
                          absl::StrCat("at most ", kMaxRepeats, " entries"));
    }
    for (double s : r.run_seconds()) {
      if (!FiniteNonNegative(s))
        return InvalidField(field + ".run_seconds", "must be finite and >= 0");
    }
    if (kind == MeasureError::kNone && r.run_seconds_size() == 0) {
      return InvalidField(field + ".run_seconds", "empty for a candidate that ran");
    }
    for (const auto& [name, value] : {std::pair{"build_seconds", r.build_seconds()},
                                      std::pair{"run_wall_seconds", r.run_wall_seconds()},
                                      std::pair{"verify_seconds", r.verify_seconds()},
                                      std::pair{"others_busy_cores", r.others_busy_cores()}}) {
      if (!FiniteNonNegative(value)) {
        return InvalidField(absl::StrCat(field, ".", name), "must be finite and >= 0");
      }
    }
    if (r.process_median_seconds_size() > kMaxRepeats) {
      return InvalidField(field + ".process_median_seconds",
                          absl::StrCat("at most ", kMaxRepeats, " entries"));
    }
    for (double s : r.process_median_seconds()) {
      if (!FiniteNonNegative(s)) {
        return InvalidField(field + ".process_median_seconds", "must be finite and >= 0");
      }
    }
    CandidateReport report;
    report.candidate_id = *id;
    report.outcome = *std::move(outcome);
    report.outcome.error_msg = Cut(report.outcome.error_msg);
    reports.push_back(std::move(report));
  }
  absl::StatusOr<int> accepted =
      dispatcher_->Report(request->worker_id(), request->lease_id(), reports);
  if (!accepted.ok()) return ToGrpcStatus(accepted.status());
  response->set_accepted(*accepted);
  return grpc::Status::OK;
}

}  // namespace tessera
