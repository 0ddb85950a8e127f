#include "server/tuning_service.h"

#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "database/record_json.h"
#include "ir/printer.h"
#include "ir/structural_hash.h"
#include "ir/target.h"
#include "proto/convert.h"
#include "rules/default/default_rule.h"
#include "server/job_spec_convert.h"
#include "server/status_convert.h"
#include "tuner/apply_best.h"
#include "tuner/best_record.h"
#include "tuner/tune.h"
#include "worker/host.h"

namespace tessera {
namespace {

using json = nlohmann::json;

constexpr int kMaxListLimit = 1000;
constexpr int kMaxTopK = 1000;
constexpr int kDefaultTopK = 10;
constexpr int kMaxExportPage = 100000;
constexpr int64_t kMaxImportLines = 1000000;
constexpr double kWatchPollSeconds = 1.0;
constexpr size_t kMaxJobIdLength = 256;

grpc::Status Invalid(const std::string& field, const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(field, ": ", message));
}

grpc::Status CheckJobId(const std::string& id) {
  if (id.empty()) return Invalid("job_id", "empty");
  if (id.size() > kMaxJobIdLength) {
    return Invalid("job_id", absl::StrCat("longer than ", kMaxJobIdLength, " characters"));
  }
  return grpc::Status::OK;
}

double EventTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

v1::JobState ToProtoState(JobState s) { return static_cast<v1::JobState>(static_cast<int>(s)); }

// One function from a workload field (spec, IR text or JSON), named as jobs name it so that the
// database finds the records jobs stored.
absl::StatusOr<TuneTaskSpec> ParseOne(const std::string& field, const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  absl::StatusOr<std::vector<TuneTaskSpec>> tasks = ParseJobTasks({text});
  if (!tasks.ok()) {
    std::string message(tasks.status().message());
    // "workloads[0]: ..." -> "<field>: ..."
    size_t colon = message.find(": ");
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", colon == std::string::npos ? message : message.substr(colon + 2)));
  }
  return std::move(tasks->front());
}

// The target string a query means (worker/host.h CompleteTarget): a full target string as
// written (canonical), or for a partial one the newest record's target among `funcs` that it
// describes, else the first verified worker target it describes, else its defaults (cpu: this
// host).
absl::StatusOr<std::string> QueryTarget(const std::string& text, const std::vector<PrimFunc>& funcs,
                                        Database* db, Dispatcher* dispatcher) {
  if (text.empty()) return absl::InvalidArgumentError("target: empty");
  const KnownTargets known = [&]() -> absl::StatusOr<std::vector<std::string>> {
    std::vector<std::string> targets;
    std::set<int64_t> ids;
    for (const PrimFunc& f : funcs) {
      TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> w, db->FindWorkload(f));
      if (w.has_value()) ids.insert(w->id);
    }
    if (!ids.empty()) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records, db->AllRecords());
      for (auto it = records.rbegin(); it != records.rend(); ++it) {
        if (ids.count(it->workload_id)) targets.push_back(it->target);
      }
    }
    std::vector<std::string> verified = dispatcher->VerifiedTargets();
    targets.insert(targets.end(), verified.begin(), verified.end());
    return targets;
  };
  TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> target, CompleteTarget(text, known));
  if (target.has_value()) return *std::move(target);
  TESSERA_ASSIGN_OR_RETURN(Target resolved, ResolveTarget(text));
  return resolved.ToString();
}

// The event that ends a watch of a job in final `state`.
v1::JobEvent::Kind FinalEventKind(JobState state) {
  return state == JobState::kSucceeded   ? v1::JobEvent::EVENT_JOB_FINISHED
         : state == JobState::kCancelled ? v1::JobEvent::EVENT_JOB_CANCELLED
                                         : v1::JobEvent::EVENT_JOB_FAILED;
}

}  // namespace

void ToProto(const JobSnapshot& s, v1::JobStatus* out) {
  out->set_job_id(s.row.id);
  out->set_name(s.row.spec.name);
  out->set_state(ToProtoState(s.row.state));
  out->set_target(s.row.target.empty() ? s.row.spec.target : s.row.target);
  out->set_max_trials(s.row.spec.max_trials_global);
  out->set_trials(s.row.trials);
  out->set_priority(s.row.spec.priority);
  for (const TaskSnapshot& t : s.tasks) {
    v1::TaskStatus* task = out->add_tasks();
    task->set_name(t.summary.name);
    task->set_workload_hash(t.workload_hash);
    task->set_weight(t.summary.weight);
    task->set_flops(t.summary.flops);
    task->set_trials(t.summary.trials);
    auto& errors = *task->mutable_errors();
    if (t.summary.build_errors) errors["build_error"] = t.summary.build_errors;
    if (t.summary.run_errors) errors["run_error"] = t.summary.run_errors;
    if (t.summary.timeouts) errors["timeout"] = t.summary.timeouts;
    if (t.summary.wrong_outputs) errors["wrong_output"] = t.summary.wrong_outputs;
    if (t.summary.workers_lost) errors["worker_lost"] = t.summary.workers_lost;
    bool has_best =
        t.summary.best_secs.has_value() && (t.summary.best_verified || !s.row.spec.verify);
    task->set_has_best(has_best);
    if (has_best) {
      task->set_best_seconds(*t.summary.best_secs);
      task->set_best_gflops(t.summary.gflops());
      task->set_best_record_id(t.summary.best_record_id);
      task->set_best_job_id(t.best_job_id);
      if (t.passed_over_record_id >= 0) task->set_passed_over_record_id(t.passed_over_record_id);
    }
    task->set_finished(t.finished);
    task->set_has_default(t.summary.default_secs.has_value());
    if (t.summary.default_secs) task->set_default_seconds(*t.summary.default_secs);
    task->set_default_error(t.summary.default_error);
    if (std::optional<double> gain = t.summary.gain()) task->set_gain(*gain);
    task->set_disturbed(t.summary.disturbed);
    task->set_runoff_records(t.runoff_records);
    task->set_best_changed_by_runoff(t.best_changed_by_runoff);
    if (t.best_changed_by_runoff && t.best_record_id_before_runoff >= 0) {
      task->set_best_record_id_before_runoff(t.best_record_id_before_runoff);
    }
    task->set_runoff(t.runoff);
    out->set_runoff_records(out->runoff_records() + t.runoff_records);
  }
  out->set_error(s.row.error);
  out->set_waiting_for(s.waiting_for);
  out->set_submitted_at(s.row.submitted_at);
  out->set_updated_at(s.row.updated_at);
  out->set_queued(s.queued);
  out->set_in_flight(s.in_flight);
  for (const std::string& w : s.warnings) out->add_warnings(w);
  if (!s.row.spec.model.empty()) {
    out->set_model(s.row.spec.model);
    // Over the bests the status shows (has_best), as `tessera tune MODEL` estimates.
    std::vector<TaskSummary> tasks;
    for (int i = 0; i < out->tasks_size(); ++i) {
      tasks.push_back(s.tasks[i].summary);
      if (!out->tasks(i).has_best()) tasks.back().best_secs.reset();
    }
    ModelEstimate e = EstimateModel(tasks);
    if (!tasks.empty() && e.missing.empty()) out->set_estimated_latency_seconds(e.seconds);
    if (!tasks.empty() && e.default_missing == 0) {
      out->set_default_latency_seconds(e.default_seconds);
    }
  }
}

#define TESSERA_CHECK_SCOPE(context, scope)                 \
  do {                                                      \
    absl::Status _auth = auth_->Check(*(context), (scope)); \
    if (!_auth.ok()) return ToGrpcStatus(_auth);            \
  } while (0)

grpc::Status TuningServiceImpl::GetVersion(grpc::ServerContext* context, const v1::Empty*,
                                           v1::VersionInfo* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  response->set_version(kTesseraVersion);
  response->set_api("tessera.v1");
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::SubmitJob(grpc::ServerContext* context,
                                          const v1::SubmitJobRequest* request,
                                          v1::SubmitJobResponse* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  absl::StatusOr<JobSpec> spec = JobSpecFromProto(*request);
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  // With tokens, a bare kind is completed only from targets that a worker token names in full
  // (server/auth.h); where no token names one, such a job could only wait for ever.
  if (absl::StatusOr<Target> t = Target::Parse(spec->target);
      t.ok() && !IsCompleteTarget(spec->target) && !auth_->CanVerifyKind(t->kind_name())) {
    return Invalid("target", absl::StrCat("a partial '", spec->target,
                                          "' is completed only from a target that a worker "
                                          "token names, and no worker token here names a ",
                                          t->kind_name(),
                                          " target: give the full target string (each "
                                          "`tessera worker` logs it: \"serving cpu -cores=...\")"));
  }
  std::optional<ModelUpload> model;
  if (!request->model().empty()) {
    model = ModelUpload{&request->model(),
                        request->model_name(),
                        {request->input_shapes().begin(), request->input_shapes().end()}};
  } else if (request->input_shapes_size() > 0 || !request->model_name().empty()) {
    return Invalid(request->input_shapes_size() > 0 ? "input_shapes" : "model_name",
                   "only with a model");
  }
  absl::StatusOr<std::string> id = jobs_->Submit(*std::move(spec), model ? &*model : nullptr);
  if (!id.ok()) return ToGrpcStatus(id.status());
  response->set_job_id(*id);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetJob(grpc::ServerContext* context, const v1::JobRef* request,
                                       v1::JobStatus* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  if (grpc::Status s = CheckJobId(request->job_id()); !s.ok()) return s;
  absl::StatusOr<JobSnapshot> snap = jobs_->Get(request->job_id());
  if (!snap.ok()) return ToGrpcStatus(snap.status());
  ToProto(*snap, response);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListJobs(grpc::ServerContext* context,
                                         const v1::ListJobsRequest* request,
                                         v1::ListJobsResponse* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  std::set<JobState> states;
  for (int i = 0; i < request->states_size(); ++i) {
    int s = request->states(i);
    if (s < 1 || s > 5) return Invalid(absl::StrCat("states[", i, "]"), "unknown job state");
    states.insert(static_cast<JobState>(s));
  }
  if (request->limit() < 0 || request->limit() > kMaxListLimit) {
    return Invalid("limit", absl::StrCat("must be in [0, ", kMaxListLimit, "]"));
  }
  absl::StatusOr<std::vector<JobSnapshot>> jobs =
      jobs_->List(states, request->limit() == 0 ? 100 : request->limit());
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (const JobSnapshot& s : *jobs) ToProto(s, response->add_jobs());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::WatchJob(grpc::ServerContext* context, const v1::JobRef* request,
                                         grpc::ServerWriter<v1::JobEvent>* writer) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  if (grpc::Status s = CheckJobId(request->job_id()); !s.ok()) return s;
  const std::string& id = request->job_id();
  // Events already logged are history: the snapshot covers them.
  bool ended = false;
  absl::StatusOr<std::vector<JobEvent>> old = jobs_->Events(id, 0, 0, &ended);
  if (!old.ok()) return ToGrpcStatus(old.status());
  uint64_t seq = old->empty() ? 0 : old->back().seq;
  absl::StatusOr<JobSnapshot> snap = jobs_->Get(id);
  if (!snap.ok()) return ToGrpcStatus(snap.status());
  v1::JobEvent first;
  first.set_kind(v1::JobEvent::EVENT_SNAPSHOT);
  first.set_task(-1);
  first.set_time(EventTime());
  ToProto(*snap, first.mutable_status());
  if (!writer->Write(first)) return grpc::Status::OK;
  if (IsFinal(snap->row.state)) {
    v1::JobEvent last = first;
    last.set_kind(FinalEventKind(snap->row.state));
    writer->Write(last);
    return grpc::Status::OK;
  }
  int trials = snap->row.trials;
  while (!context->IsCancelled() && !stopping_) {
    absl::StatusOr<std::vector<JobEvent>> events =
        jobs_->Events(id, seq, kWatchPollSeconds, &ended);
    if (!events.ok()) return ToGrpcStatus(events.status());
    for (const JobEvent& e : *events) {
      seq = e.seq;
      if (e.kind == JobEventKind::kSnapshot) continue;
      v1::JobEvent out;
      out.set_kind(static_cast<v1::JobEvent::Kind>(static_cast<int>(e.kind)));
      out.set_task(e.task);
      out.set_time(e.time);
      JobSnapshot status = e.status;
      if (absl::StatusOr<JobSnapshot> now = jobs_->Get(id); now.ok()) {
        status.waiting_for = now->waiting_for;
        status.queued = now->queued;
        status.in_flight = now->in_flight;
      }
      ToProto(status, out.mutable_status());
      trials = status.row.trials;
      if (!writer->Write(out)) return grpc::Status::OK;
      if (e.kind == JobEventKind::kJobFinished || e.kind == JobEventKind::kJobFailed ||
          e.kind == JobEventKind::kJobCancelled) {
        return grpc::Status::OK;
      }
    }
    if (ended && events->empty()) {
      if (jobs_->Stopping()) {
        // Stopped by a server shutdown: it resumes on the next start.
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
      }
      // Not run here (another server on the shared state runs it, or took it over).
      return WatchRows(context, id, trials, writer);
    }
  }
  if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  return grpc::Status(grpc::StatusCode::CANCELLED, "the client hung up");
}

grpc::Status TuningServiceImpl::WatchRows(grpc::ServerContext* context, const std::string& id,
                                          int trials, grpc::ServerWriter<v1::JobEvent>* writer) {
  while (!context->IsCancelled() && !stopping_ && !jobs_->Stopping()) {
    absl::StatusOr<JobSnapshot> snap = jobs_->Get(id);
    if (!snap.ok()) return ToGrpcStatus(snap.status());
    v1::JobEvent out;
    out.set_task(-1);
    out.set_time(EventTime());
    ToProto(*snap, out.mutable_status());
    if (IsFinal(snap->row.state)) {
      out.set_kind(FinalEventKind(snap->row.state));
      writer->Write(out);
      return grpc::Status::OK;
    }
    if (snap->row.trials != trials) {
      trials = snap->row.trials;
      out.set_kind(v1::JobEvent::EVENT_BATCH_DONE);
      if (!writer->Write(out)) return grpc::Status::OK;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(kWatchPollSeconds));
  }
  if (context->IsCancelled())
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client hung up");
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
}

grpc::Status TuningServiceImpl::CancelJob(grpc::ServerContext* context, const v1::JobRef* request,
                                          v1::JobStatus* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  if (grpc::Status s = CheckJobId(request->job_id()); !s.ok()) return s;
  absl::StatusOr<JobSnapshot> snap = jobs_->Cancel(request->job_id());
  if (!snap.ok()) return ToGrpcStatus(snap.status());
  ToProto(*snap, response);
  // A job that ended otherwise keeps its final state; one still stopping says so, never QUEUED.
  if (!IsFinal(snap->row.state)) response->set_state(v1::JOB_CANCELLING);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetBest(grpc::ServerContext* context,
                                        const v1::GetBestRequest* request,
                                        v1::GetBestResponse* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  absl::StatusOr<TuneTaskSpec> task = ParseOne("workload", request->workload());
  if (!task.ok()) return ToGrpcStatus(task.status());
  response->set_workload_name(task->name);
  absl::StatusOr<std::string> target =
      QueryTarget(request->target(), {task->func}, db_, dispatcher_);
  if (!target.ok()) return ToGrpcStatus(target.status());
  absl::StatusOr<Target> parsed_target = Target::Parse(*target);
  if (!parsed_target.ok()) return ToGrpcStatus(parsed_target.status());
  absl::StatusOr<std::optional<ChosenRecord>> best =
      BestRecordOrDefault(db_, task->func, *parsed_target, !request->include_unverified());
  if (!best.ok()) return ToGrpcStatus(best.status());
  response->set_found(best->has_value());
  if (best->has_value()) {
    const std::string hash = StructuralHashHex(task->func);
    ToProto((*best)->record, hash, response->mutable_record());
    if ((*best)->passed_over) {
      ToProto(*(*best)->passed_over, hash, response->mutable_passed_over());
    }
  }
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetTopK(grpc::ServerContext* context,
                                        const v1::GetTopKRequest* request,
                                        v1::GetTopKResponse* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  if (request->k() < 0 || request->k() > kMaxTopK) {
    return Invalid("k", absl::StrCat("must be in [0, ", kMaxTopK, "]"));
  }
  absl::StatusOr<TuneTaskSpec> task = ParseOne("workload", request->workload());
  if (!task.ok()) return ToGrpcStatus(task.status());
  absl::StatusOr<std::string> target =
      QueryTarget(request->target(), {task->func}, db_, dispatcher_);
  if (!target.ok()) return ToGrpcStatus(target.status());
  absl::StatusOr<Target> parsed_target = Target::Parse(*target);
  if (!parsed_target.ok()) return ToGrpcStatus(parsed_target.status());
  // GetBest's record first, then each other program by its latest record: topk's first is best.
  absl::StatusOr<TopRecords> top =
      TopRecordsWithBest(db_, task->func, *parsed_target, !request->include_unverified(),
                         request->k() == 0 ? kDefaultTopK : request->k());
  if (!top.ok()) return ToGrpcStatus(top.status());
  const std::string hash = StructuralHashHex(task->func);
  for (const TuningRecord& r : top->records) ToProto(r, hash, response->add_records());
  if (top->best) response->set_best_record_id(top->best->record.id);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ApplyBest(grpc::ServerContext* context,
                                          const v1::ApplyBestRequest* request,
                                          v1::ApplyBestResponse* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  if (request->workloads_size() == 0) return Invalid("workloads", "give at least one workload");
  std::vector<std::string> texts(request->workloads().begin(), request->workloads().end());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].empty()) return Invalid(absl::StrCat("workloads[", i, "]"), "empty");
  }
  absl::StatusOr<std::vector<TuneTaskSpec>> tasks = ParseJobTasks(texts);
  if (!tasks.ok()) return ToGrpcStatus(tasks.status());
  std::vector<PrimFunc> funcs;
  IRModule mod;
  for (const TuneTaskSpec& t : *tasks) {
    funcs.push_back(t.func);
    mod.Update(t.func);
  }
  absl::StatusOr<std::string> target_text = QueryTarget(request->target(), funcs, db_, dispatcher_);
  if (!target_text.ok()) return ToGrpcStatus(target_text.status());
  absl::StatusOr<Target> target = Target::Parse(*target_text);
  if (!target.ok()) return ToGrpcStatus(target.status());
  std::vector<ApplyBestEntry> hits;
  absl::StatusOr<IRModule> tuned = tessera::ApplyBest(mod, *target, db_, &hits);
  if (!tuned.ok()) return ToGrpcStatus(tuned.status());
  std::vector<DefaultScheduleEntry> defaults;
  tuned = ApplyDefaultSchedule(*tuned, *target, DefaultRulesFor(*target), &defaults);
  if (!tuned.ok()) return ToGrpcStatus(tuned.status());
  for (const TuneTaskSpec& t : *tasks) {
    v1::AppliedFunction* out = response->add_functions();
    out->set_name(t.name);
    for (const ApplyBestEntry& h : hits) {
      if (h.function != t.func.name() || !h.hit) continue;
      out->set_source("record");
      out->set_record_id(h.record_id);
      out->set_record_seconds(h.record_secs);
    }
    for (const DefaultScheduleEntry& d : defaults) {
      if (d.function == t.func.name() && !d.rule.empty() && !d.already_scheduled) {
        out->set_source("default");
        out->set_default_rule(d.rule);
      }
    }
    absl::StatusOr<PrimFunc> scheduled = tuned->Lookup(t.func.name());
    if (!scheduled.ok()) return ToGrpcStatus(scheduled.status());
    out->set_ir_text(PrintFunc(*scheduled));
  }
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ExportRecords(grpc::ServerContext* context,
                                              const v1::ExportRecordsRequest* request,
                                              grpc::ServerWriter<v1::RecordLine>* writer) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  if (request->page_size() < 0 || request->page_size() > kMaxExportPage) {
    return Invalid("page_size", absl::StrCat("must be in [0, ", kMaxExportPage, "]"));
  }
  // A page token is the id of the last record of the previous page: records are exported in
  // commit order, so the next page starts after it.
  int64_t after = 0;
  if (!request->page_token().empty() &&
      (!absl::SimpleAtoi(request->page_token(), &after) || after < 0)) {
    return Invalid("page_token", "not a next_page_token of ExportRecords");
  }
  std::set<std::string> only(request->workload_hashes().begin(), request->workload_hashes().end());
  absl::StatusOr<std::vector<Workload>> workloads = db_->AllWorkloads();
  if (!workloads.ok()) return ToGrpcStatus(workloads.status());
  std::map<int64_t, const Workload*> by_id;
  for (const Workload& w : *workloads) by_id[w.id] = &w;
  const int64_t page_size = request->page_size() == 0 ? -1 : request->page_size();
  // One line is held back until the next is known, so the page's last line can carry the token.
  std::optional<v1::RecordLine> pending;
  int64_t sent = 0;
  constexpr int kChunk = 512;
  while (true) {
    absl::StatusOr<std::vector<TuningRecord>> records = db_->RecordsAfter(after, kChunk);
    if (!records.ok()) return ToGrpcStatus(records.status());
    for (const TuningRecord& r : *records) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      auto it = by_id.find(r.workload_id);
      if (it == by_id.end() || (!only.empty() && !only.count(it->second->hash))) {
        after = r.id;
        continue;
      }
      if (page_size >= 0 && sent == page_size) {
        // A record follows the page: its last line says where the next page starts.
        pending->set_next_page_token(std::to_string(after));
        writer->Write(*pending);
        return grpc::Status::OK;
      }
      if (pending && !writer->Write(*pending)) return grpc::Status::OK;
      pending.emplace();
      pending->set_json(RecordToJsonLine(*it->second, r).dump());
      ++sent;
      after = r.id;
    }
    if (static_cast<int>(records->size()) < kChunk) break;
  }
  if (pending) writer->Write(*pending);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ImportRecords(grpc::ServerContext* context,
                                              grpc::ServerReader<v1::RecordLine>* reader,
                                              v1::ImportRecordsResponse* response) {
  TESSERA_CHECK_SCOPE(context, Scope::kClient);
  // Every line is read and checked before anything is committed: a bad line imports nothing.
  std::vector<NumberedLine> lines;
  v1::RecordLine line;
  for (int64_t n = 1; reader->Read(&line); ++n) {
    if (n > kMaxImportLines) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("at most ", kMaxImportLines, " lines per import"));
    }
    json j = json::parse(line.json(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Invalid(absl::StrCat("line ", n), "malformed JSON");
    absl::StatusOr<JsonLineRecord> entry = RecordFromJsonLine(j);
    if (!entry.ok()) {
      return Invalid(absl::StrCat("line ", n), std::string(entry.status().message()));
    }
    lines.push_back({n, *std::move(entry)});
  }
  absl::StatusOr<ImportStats> stats =
      ImportRecordLines(db_, std::move(lines), [](int64_t n) { return absl::StrCat("line ", n); });
  if (!stats.ok()) return ToGrpcStatus(stats.status());
  TESSERA_LOG(INFO) << "import: " << stats->imported << " records, " << stats->duplicates
                    << " duplicates, " << stats->links_dropped << " re-timing links dropped";
  response->set_imported(stats->imported);
  response->set_duplicates(stats->duplicates);
  response->set_links_dropped(stats->links_dropped);
  return grpc::Status::OK;
}

}  // namespace tessera
