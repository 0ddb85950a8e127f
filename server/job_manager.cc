#include "server/job_manager.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "frontend/workload_spec.h"
#include "ir/flops.h"
#include "ir/serialize.h"
#include "ir/structural_hash.h"
#include "ir/target.h"
#include "ir/verify.h"
#include "model/load.h"
#include "rules/registry.h"
#include "server/durable_measurer.h"
#include "server/remote_measurer.h"
#include "tuner/best_record.h"
#include "tuner/runoff.h"
#include "tuner/tune.h"
#include "tuner/tuning_job.h"
#include "worker/host.h"

namespace tessera {
namespace {

constexpr size_t kMaxNameLength = 256;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

absl::Status Field(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// The bytes of `func`'s argument buffers together, in floating point: extents up to 2^31 each
// must not overflow. A shape that is not constant counts as unbounded.
double BufferBytes(const PrimFunc& func) {
  double total = 0;
  for (const Buffer& b : func.params()) {
    double bytes = b->dtype.bytes();
    for (const Expr& extent : b->shape) {
      const int64_t* v = AsConstInt(extent);
      bytes *= v == nullptr ? std::numeric_limits<double>::infinity() : static_cast<double>(*v);
    }
    total += bytes;
  }
  return total;
}

// The service's checks of a job beyond its settings' own (TuningSettings::Validate): the
// workloads, the target and the server's limits.
absl::Status ValidateSpec(const JobSpec& spec, const JobManagerOptions& options) {
  if (spec.workloads.empty()) return Field("workloads", "give at least one workload");
  if (spec.workloads.size() > static_cast<size_t>(options.max_workloads)) {
    return Field("workloads", absl::StrCat("at most ", options.max_workloads,
                                           " per job (the server's --max-job-workloads)"));
  }
  if (spec.target.empty()) return Field("target", "give a target (cpu, cuda, or a full string)");
  absl::StatusOr<Target> target = Target::Parse(spec.target);
  if (!target.ok()) return Field("target", std::string(target.status().message()));
  if (spec.max_trials_global > options.max_trials) {
    return Field("max_trials",
                 absl::StrCat("at most ", options.max_trials, " (the server's --max-job-trials)"));
  }
  TESSERA_RETURN_IF_ERROR(spec.Validate(*target));
  if (spec.name.size() > kMaxNameLength) {
    return Field("name", absl::StrCat("longer than ", kMaxNameLength, " characters"));
  }
  return absl::OkStatus();
}

// Makes `spec` a model job: the tasks `tessera tune MODEL` extracts become its workloads, as IR
// JSON named as tune names them (the records of both key alike), with their weights. The job is
// then stored, resumed after a restart and measured as any other, and the model's bytes are not
// kept.
absl::Status ImportModelTasks(const ModelUpload& model, const JobManagerOptions& options,
                              JobSpec* spec) {
  if (!spec->workloads.empty()) return Field("model", "give workloads or a model, not both");
  if (static_cast<int64_t>(model.bytes->size()) > options.max_model_bytes) {
    return Field("model",
                 absl::StrCat(model.bytes->size(), " bytes, more than the server's limit of ",
                              options.max_model_bytes, " (--max-model-bytes)"));
  }
  if (model.name.size() > kMaxNameLength) {
    return Field("model_name", absl::StrCat("longer than ", kMaxNameLength, " characters"));
  }
  spec->model = model.name.empty() ? "model.onnx" : model.name;
  absl::StatusOr<InputShapes> shapes = ParseInputShapes(model.input_shapes);
  if (!shapes.ok()) return Field("input_shapes", std::string(shapes.status().message()));
  TESSERA_ASSIGN_OR_RETURN(LoadedModel loaded,
                           LoadModelBytes(*model.bytes, spec->model, /*fuse=*/true, *shapes));
  if (loaded.tasks.size() > static_cast<size_t>(options.max_workloads)) {
    return Field("model", absl::StrCat(spec->model, " has ", loaded.tasks.size(),
                                       " tasks, more than the server's limit of ",
                                       options.max_workloads, " per job (--max-job-workloads)"));
  }
  for (const ExtractedTask& t : loaded.tasks) {
    spec->workloads.push_back(SaveJson(t.func.WithName(t.name)));
    spec->weights.push_back(t.weight);
  }
  return absl::OkStatus();
}

// The runoff's measurements (tuner/runoff.h) go to the workers as a batch of the search does:
// stored as the job's pending batch, measured by `remote`, then deleted. Its rows carry no
// trace, so a server that restarts in the middle drops the batch (no record of it was committed
// yet) and runs the runoff again.
class StoredRunoffMeasurer : public Measurer {
 public:
  StoredRunoffMeasurer(std::string job_id, int task, JobStore* store, Measurer* remote)
      : job_id_(std::move(job_id)), task_(task), store_(store), remote_(remote) {}

  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override {
    std::vector<NewCandidate> rows;
    for (const PrimFunc& f : request.candidates) {
      rows.push_back(NewCandidate{"", StructuralHashHex(f), SaveJson(f)});
    }
    TESSERA_RETURN_IF_ERROR(store_->AddBatch(job_id_, task_, rows).status());
    absl::StatusOr<MeasuredBatch> measured = remote_->Measure(request);
    absl::Status deleted = store_->DeleteBatch(job_id_);
    if (!measured.ok()) return measured.status();
    TESSERA_RETURN_IF_ERROR(deleted);
    return measured;
  }

 private:
  std::string job_id_;
  int task_;
  JobStore* store_;
  Measurer* remote_;
};

// Sets `t`'s best to the record GetBest returns for `func` on `target` (verified ones only when
// the job verifies) and says what `job_id`'s runoff changed: status and GetBest agree.
absl::Status SetTaskBest(Database* db, const PrimFunc& func, const Target& target, bool verify,
                         const std::string& job_id, TaskSnapshot* t) {
  TESSERA_ASSIGN_OR_RETURN(BestAndRunoff best,
                           BestRecordAndRunoff(db, func, target, verify, job_id));
  TaskSummary& s = t->summary;
  s.best_secs.reset();
  s.best_verified = false;
  s.best_record_id = -1;
  t->best_job_id.clear();
  t->passed_over_record_id = -1;
  if (best.best) {
    s.best_secs = best.best->record.mean_secs();
    s.best_verified = best.best->record.verified;
    s.best_record_id = best.best->record.id;
    t->best_job_id = best.best->record.job_id;
    if (best.best->passed_over) t->passed_over_record_id = best.best->passed_over->id;
  }
  t->runoff_records = best.runoff_records;
  t->best_changed_by_runoff = best.changed_by_runoff();
  t->best_record_id_before_runoff = best.before_runoff ? best.before_runoff->record.id : -1;
  return absl::OkStatus();
}

// Copies the fields SetTaskBest and the runoff set from `from` into `to` (the default's time
// only once a runoff round has timed it).
void CopyBestFields(const TaskSnapshot& from, TaskSnapshot* to) {
  to->summary.best_secs = from.summary.best_secs;
  to->summary.best_verified = from.summary.best_verified;
  to->summary.best_record_id = from.summary.best_record_id;
  to->best_job_id = from.best_job_id;
  to->passed_over_record_id = from.passed_over_record_id;
  to->runoff_records = from.runoff_records;
  to->best_changed_by_runoff = from.best_changed_by_runoff;
  to->best_record_id_before_runoff = from.best_record_id_before_runoff;
  to->runoff = from.runoff;
  if (from.summary.default_secs) to->summary.default_secs = from.summary.default_secs;
}

// One round of a runoff, as the log and the status say it.
std::string RunoffLine(const Runoff& r) {
  return absl::StrFormat(
      "record %d (%.4g ms in the job) against the default schedule's record %d (%.4g ms), side "
      "by side %.4g against %.4g ms: %s",
      r.fastest_id, r.fastest_secs_before * 1e3, r.default_id, r.default_secs_before * 1e3,
      r.fastest_secs * 1e3, r.default_secs * 1e3, RunoffVerdict(r));
}

}  // namespace

absl::StatusOr<std::vector<TuneTaskSpec>> ParseJobTasks(const std::vector<std::string>& workloads) {
  std::vector<TuneTaskSpec> tasks;
  std::vector<std::string> hashes;
  std::map<std::string, int> used;
  for (size_t i = 0; i < workloads.size(); ++i) {
    absl::StatusOr<SpecFunction> f = ParseWorkloadText(workloads[i]);
    absl::Status well_formed = f.ok() ? VerifyWellFormed(f->func) : f.status();
    if (well_formed.ok()) well_formed = VerifyAccessesInBounds(f->func);
    if (!well_formed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("workloads[", i, "]: ", well_formed.message()));
    }
    std::string hash = StructuralHashHex(f->func);
    auto same = std::find(hashes.begin(), hashes.end(), hash);
    if (same != hashes.end()) {
      tasks[same - hashes.begin()].weight += 1;
      continue;
    }
    // Function names as `tessera tune` gives them ("gmm", "gmm_1"), so the database keys agree.
    int n = used[f->stem]++;
    std::string name = n == 0 ? f->stem : absl::StrCat(f->stem, "_", n);
    tasks.push_back(TuneTaskSpec{f->label, f->func.WithName(name), 1.0});
    hashes.push_back(hash);
  }
  return tasks;
}

absl::StatusOr<std::vector<TuneTaskSpec>> JobTasks(const JobSpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuneTaskSpec> tasks, ParseJobTasks(spec.workloads));
  if (spec.weights.empty()) return tasks;
  if (spec.weights.size() != tasks.size()) {
    return absl::DataLossError(
        absl::StrCat("job spec: ", spec.weights.size(), " weights for ", tasks.size(), " tasks"));
  }
  for (size_t i = 0; i < tasks.size(); ++i) tasks[i].weight = spec.weights[i];
  return tasks;
}

JobManager::JobManager(Database* db, JobStore* store, Dispatcher* dispatcher,
                       JobManagerOptions options)
    : db_(db),
      store_(store),
      dispatcher_(dispatcher),
      options_(std::move(options)),
      shared_(store->shared()),
      owner_(options_.owner) {
  if (owner_.empty()) {
    std::random_device rd;
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    owner_ =
        absl::StrCat(host[0] ? host : "server", "-", getpid(), "-", absl::Hex(rd() & 0xffffff));
  }
}

JobManager::~JobManager() { Shutdown(); }

void JobManager::Stop() {
  stopping_ = true;
  stop_cv_.notify_all();
}

void JobManager::Shutdown() {
  Stop();
  dispatcher_->Shutdown();
  // The claim loop first: it may start job threads until it stops.
  if (claimer_.joinable()) claimer_.join();
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, job] : jobs_) jobs.push_back(job);
  }
  for (auto& job : jobs) {
    job->cv.notify_all();
    if (job->thread.joinable()) job->thread.join();
  }
  if (shared_ != nullptr && !released_.exchange(true)) {
    absl::Status s = shared_->ReleaseClaims(owner_);
    if (!s.ok()) TESSERA_LOG(ERROR) << "releasing the job claims of " << owner_ << ": " << s;
  }
}

void JobManager::ClaimLoop() {
  ClaimOnce();
  while (!stopping()) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stop_cv_.wait_for(lock, std::chrono::duration<double>(options_.claim_seconds / 3),
                        [this] { return stopping(); });
    }
    if (stopping()) break;
    ClaimOnce();
  }
}

void JobManager::ClaimOnce() {
  // The local jobs first: one started after this (Submit claims before it starts a thread)
  // must not be judged by a renewal that ran before its claim.
  std::vector<std::shared_ptr<Job>> local;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, job] : jobs_) local.push_back(job);
  }
  double now = Now();
  double expires = now + options_.claim_seconds;
  absl::StatusOr<std::vector<std::string>> owned = shared_->RenewClaims(owner_, expires);
  if (!owned.ok()) {
    // Claims last claim_seconds; the next round tries again well before they expire.
    TESSERA_LOG(WARNING) << "renewing the job claims of " << owner_ << ": " << owned.status();
    return;
  }
  std::set<std::string> still(owned->begin(), owned->end());
  for (auto& job : local) {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->ended || still.count(job->id)) continue;
    // Another server owns it now, or it ended there (cancelled): stop without touching it.
    TESSERA_LOG(WARNING) << "job " << job->id << ": no longer owned by " << owner_
                         << ", stopping its search here";
    job->abandoned = true;
    job->cancel = true;
    dispatcher_->CancelJob(job->id);
  }
  absl::StatusOr<std::vector<std::string>> claimed =
      shared_->ClaimJobs(owner_, now, expires, /*limit=*/16);
  if (!claimed.ok()) {
    TESSERA_LOG(WARNING) << "claiming jobs for " << owner_ << ": " << claimed.status();
    return;
  }
  for (const std::string& id : *claimed) {
    std::shared_ptr<Job> old = Find(id);
    if (old != nullptr) {
      std::lock_guard<std::mutex> lock(old->mu);
      if (!old->ended) continue;  // still winding down; its claim is ours again
    }
    if (old != nullptr && old->thread.joinable()) old->thread.join();
    absl::StatusOr<JobRow> row = store_->GetJob(id);
    if (!row.ok()) {
      TESSERA_LOG(WARNING) << "job " << id << ": claimed but unreadable: " << row.status();
      continue;
    }
    TESSERA_LOG(INFO) << "job " << id << ": claimed by " << owner_ << ", resuming (" << row->trials
                      << " trials committed)";
    auto job = std::make_shared<Job>();
    job->id = id;
    job->snapshot.row = *std::move(row);
    StartThread(job);
  }
}

std::shared_ptr<JobManager::Job> JobManager::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

std::shared_ptr<JobManager::Job> JobManager::FindRunHere(const std::string& id) {
  std::shared_ptr<Job> job = Find(id);
  return job != nullptr && !job->abandoned ? job : nullptr;
}

void JobManager::StartThread(std::shared_ptr<Job> job) {
  Job* raw = job.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[job->id] = job;
  }
  raw->thread = std::thread([this, raw] { Run(raw); });
}

absl::Status JobManager::ResumeAll() {
  if (shared_ != nullptr) {
    TESSERA_LOG(INFO) << "shared state database: this server claims jobs as " << owner_;
    claimer_ = std::thread([this] { ClaimLoop(); });
    return absl::OkStatus();
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<JobRow> rows, store_->ListJobs());
  std::reverse(rows.begin(), rows.end());  // oldest first
  for (JobRow& row : rows) {
    if (IsFinal(row.state)) continue;
    TESSERA_LOG(INFO) << "job " << row.id << ": resuming (" << row.trials << " trials committed)";
    auto job = std::make_shared<Job>();
    job->id = row.id;
    job->snapshot.row = std::move(row);
    StartThread(job);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> JobManager::Submit(JobSpec spec, const ModelUpload* model) {
  if (stopping()) return absl::UnavailableError("the server is shutting down");
  if (model != nullptr) TESSERA_RETURN_IF_ERROR(ImportModelTasks(*model, options_, &spec));
  TESSERA_RETURN_IF_ERROR(ValidateSpec(spec, options_));
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuneTaskSpec> tasks, JobTasks(spec));
  for (size_t i = 0; i < tasks.size(); ++i) {
    const double bytes = BufferBytes(tasks[i].func);
    if (bytes > static_cast<double>(options_.max_buffer_bytes)) {
      return Field(model != nullptr ? absl::StrCat("model: ", spec.model, ": task ", tasks[i].name)
                                    : absl::StrCat("workloads[", i, "]"),
                   absl::StrCat("its buffers need ", absl::StrFormat("%.4g", bytes),
                                " bytes, more than the server's limit of ",
                                options_.max_buffer_bytes, " (--max-buffer-bytes)"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(JobRow row, store_->CreateJob(spec, Now()));
  TESSERA_LOG(INFO) << "job " << row.id << ": submitted, "
                    << (spec.model.empty() ? "" : absl::StrCat("model ", spec.model, ", "))
                    << spec.workloads.size() << " workload(s) on " << spec.target << ", "
                    << spec.max_trials_global << " trials, priority " << spec.priority;
  if (shared_ != nullptr) {
    // Another server's claim loop may have taken it first: then that server runs it.
    TESSERA_ASSIGN_OR_RETURN(
        bool mine, shared_->ClaimJob(row.id, owner_, Now(), Now() + options_.claim_seconds));
    if (!mine) return row.id;
  }
  auto job = std::make_shared<Job>();
  job->id = row.id;
  job->snapshot.row = row;
  StartThread(job);
  return row.id;
}

void JobManager::UpdateRow(Job* job, const std::function<void(JobRow*)>& update) {
  std::lock_guard<std::mutex> lock(job->mu);
  update(&job->snapshot.row);
  job->snapshot.row.updated_at = Now();
}

void JobManager::Emit(Job* job, JobEventKind kind, int task) {
  {
    std::lock_guard<std::mutex> lock(job->mu);
    JobEvent event;
    event.seq = job->next_seq++;
    event.kind = kind;
    event.task = task;
    event.time = Now();
    event.status = job->snapshot;
    job->events.push_back(std::move(event));
    while (static_cast<int>(job->events.size()) > options_.max_events) job->events.pop_front();
  }
  job->cv.notify_all();
}

absl::Status JobManager::ResolveTarget(Job* job) {
  std::string target;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    if (!job->snapshot.row.target.empty()) return absl::OkStatus();
    target = job->snapshot.row.spec.target;
  }
  // A partial target ("cpu", "cpu -cores=2") waits for a verified worker target it describes
  // (worker/host.h CompleteTarget): the defaults of the keys left out are no machine's.
  const KnownTargets verified = [this]() -> absl::StatusOr<std::vector<std::string>> {
    return dispatcher_->VerifiedTargets();
  };
  std::string resolved;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> t, CompleteTarget(target, verified));
    if (t.has_value()) {
      resolved = *std::move(t);
      break;
    }
    {
      std::lock_guard<std::mutex> lock(job->mu);
      job->unresolved_target = target;
    }
    if (job->cancel) return absl::CancelledError(absl::StrCat("job ", job->id, " was cancelled"));
    if (stopping()) return absl::UnavailableError("the server is shutting down");
    std::unique_lock<std::mutex> lock(mu_);
    stop_cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
  TESSERA_RETURN_IF_ERROR(store_->SetTarget(job->id, resolved, Now()));
  UpdateRow(job, [&](JobRow* row) { row->target = resolved; });
  {
    std::lock_guard<std::mutex> lock(job->mu);
    job->unresolved_target.clear();
  }
  TESSERA_LOG(INFO) << "job " << job->id << ": target " << resolved;
  return absl::OkStatus();
}

// One run of a job on this server: its TuningJob, and what the job's status shows of it.
// RunJob drives it through the step loop; what follows each commit and the runoff after the
// search are its methods.
class JobManager::JobRun {
 public:
  static absl::StatusOr<std::unique_ptr<JobRun>> Start(JobManager* manager, Job* job) {
    auto run = std::unique_ptr<JobRun>(new JobRun(manager, job));
    TESSERA_RETURN_IF_ERROR(run->Init());
    return run;
  }

  TuningJob* tuning() { return tuning_.get(); }
  const JobSpec& spec() const { return row_.spec; }

  // kCancelled or kUnavailable when the job must stop before its next step.
  absl::Status CheckGoing() const {
    if (job_->cancel) return absl::CancelledError(absl::StrCat("job ", job_->id, " was cancelled"));
    if (manager_->stopping()) return absl::UnavailableError("the server is shutting down");
    return absl::OkStatus();
  }

  // The job's state becomes running with its first batch.
  absl::Status MarkRunning() {
    if (row_.state != JobState::kQueued) return absl::OkStatus();
    row_.state = JobState::kRunning;
    TESSERA_RETURN_IF_ERROR(manager_->store_->SetState(job_->id, JobState::kRunning, "", Now()));
    manager_->UpdateRow(job_, [](JobRow* r) { r->state = JobState::kRunning; });
    return absl::OkStatus();
  }

  // After a batch of `batch.task` was committed (`before`: the summary before it): the trials
  // stored, the task's best as GetBest answers, the status, the log line and the events.
  absl::Status Committed(const JobBatch& batch, const TuneSummary& before) {
    TESSERA_RETURN_IF_ERROR(manager_->store_->SetTrials(job_->id, tuning_->trials(), Now()));
    const int task = batch.task;
    if (task < 0 || task >= static_cast<int>(bests_.size())) return absl::OkStatus();
    UpdateBest(task);
    const bool was_finished = TaskFinished(task);
    Refresh();
    TESSERA_LOG(INFO) << "job " << job_->id << ": committed a batch of task " << task << ", "
                      << tuning_->trials() << "/" << spec().max_trials_global << " trials";
    manager_->Emit(job_, JobEventKind::kBatchDone, task);
    const std::optional<double>& best = tuning_->Summary().tasks[task].best_secs;
    if (best.has_value() && best != before.tasks[task].best_secs) {
      manager_->Emit(job_, JobEventKind::kNewBest, task);
    }
    if (TaskFinished(task) && !was_finished) {
      manager_->Emit(job_, JobEventKind::kTaskFinished, task);
    }
    return absl::OkStatus();
  }

  // Each task's best against its default schedule, side by side (tuner/runoff.h), measured by
  // `remote` as a stored batch; the status says every round.
  absl::Status RunOffs(Measurer* remote) {
    for (size_t i = 0; i < tuning_->tasks().size(); ++i) {
      const PrimFunc& func = tuning_->tasks()[i].func;
      StoredRunoffMeasurer measurer(job_->id, static_cast<int>(i), manager_->store_, remote);
      absl::StatusOr<std::vector<Runoff>> rounds =
          RunOff(manager_->db_, func, target_, spec().verify, &measurer, job_->id);
      TESSERA_RETURN_IF_ERROR(CheckGoing());
      std::vector<std::string> lines;
      if (!rounds.ok()) {
        // The search's records stand; only the check of its best against the default failed.
        TESSERA_LOG(WARNING) << "job " << job_->id << ": runoff of task " << i << ": "
                             << rounds.status();
        lines.push_back(absl::StrCat("failed: ", rounds.status().message()));
      } else {
        // The default's time becomes the last round's, as in `tune` (TaskSummary::runoffs);
        // UpdateBest below sets the best as GetBest answers.
        TakeRunoffFigures(manager_->db_, func, target_, spec().verify, *rounds, &bests_[i].summary)
            .IgnoreError();
        for (const Runoff& r : *rounds) {
          lines.push_back(RunoffLine(r));
          TESSERA_LOG(INFO) << "job " << job_->id << ": runoff of task " << i << ": "
                            << lines.back();
        }
      }
      UpdateBest(static_cast<int>(i));
      bests_[i].runoff = absl::StrJoin(lines, "\n");
    }
    Refresh();
    return absl::OkStatus();
  }

  // The status's tasks from the TuningJob's summary and the bests.
  void Refresh() {
    TuneSummary summary = tuning_->Summary();
    std::lock_guard<std::mutex> lock(job_->mu);
    job_->snapshot.tasks.resize(summary.tasks.size());
    for (size_t i = 0; i < summary.tasks.size(); ++i) {
      TaskSnapshot& t = job_->snapshot.tasks[i];
      t.workload_hash = i < hashes_.size() ? hashes_[i] : "";
      t.summary = summary.tasks[i];
      if (i < bests_.size()) CopyBestFields(bests_[i], &t);
      t.finished = t.summary.trials >= per_task_ || tuning_->finished();
    }
    job_->snapshot.warnings = summary.warnings;
    job_->snapshot.row.trials = tuning_->trials();
    job_->snapshot.row.updated_at = Now();
  }

 private:
  JobRun(JobManager* manager, Job* job) : manager_(manager), job_(job) {}

  absl::Status Init() {
    {
      std::lock_guard<std::mutex> lock(job_->mu);
      row_ = job_->snapshot.row;
    }
    TESSERA_ASSIGN_OR_RETURN(target_, Target::Parse(row_.target));
    TESSERA_ASSIGN_OR_RETURN(std::vector<TuneTaskSpec> tasks, JobTasks(spec()));
    for (const TuneTaskSpec& t : tasks) hashes_.push_back(StructuralHashHex(t.func));
    TuneOptions options(spec());
    options.target = target_;
    options.num_threads = manager_->options_.search_threads;
    options.measure.runner = manager_->options_.runner;
    options.measure.runner.seed = static_cast<uint64_t>(spec().seed);
    options.measure.build_timeout_sec = manager_->options_.build_timeout_sec;
    per_task_ = options.PerTaskBudget();
    TESSERA_ASSIGN_OR_RETURN(tuning_,
                             TuningJob::Start(std::move(tasks), manager_->db_, options, job_->id));
    bests_.resize(tuning_->tasks().size());
    for (size_t i = 0; i < bests_.size(); ++i) UpdateBest(static_cast<int>(i));
    Refresh();
    manager_->Emit(job_, JobEventKind::kSnapshot, -1);
    return absl::OkStatus();
  }

  // Task `i`'s record as GetBest returns it and what the runoff did (SetTaskBest): recomputed
  // whenever its records change, so that the status's best is GetBest's.
  void UpdateBest(int i) {
    absl::Status s = SetTaskBest(manager_->db_, tuning_->tasks()[i].func, target_, spec().verify,
                                 job_->id, &bests_[i]);
    if (!s.ok()) {
      TESSERA_LOG(WARNING) << "job " << job_->id << ": the best record of task " << i << ": " << s;
    }
  }

  bool TaskFinished(int task) const {
    std::lock_guard<std::mutex> lock(job_->mu);
    return task < static_cast<int>(job_->snapshot.tasks.size()) &&
           job_->snapshot.tasks[task].finished;
  }

  JobManager* const manager_;
  Job* const job_;
  JobRow row_;  // as the run started; its state as this run set it
  Target target_;
  std::vector<std::string> hashes_;
  int per_task_ = 0;
  std::unique_ptr<TuningJob> tuning_;
  std::vector<TaskSnapshot> bests_;
};

// The step loop of tuner/tuning_job.h, measured by the workers through the dispatcher, each
// batch stored until committed (DurableMeasurer).
absl::Status JobManager::RunJob(Job* job) {
  TESSERA_RETURN_IF_ERROR(ResolveTarget(job));
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<JobRun> run, JobRun::Start(this, job));
  TuningJob* tuning = run->tuning();
  RemoteMeasurer remote(job->id, run->spec().priority, dispatcher_, store_,
                        tuning->options().measure.runner, options_.build_timeout_sec, &job->cancel);
  // Stores each batch before it is measured and drops it once committed; restores the one a
  // previous run left pending (server/durable_measurer.h).
  DurableMeasurer measurer(job->id, store_, db_, &remote);
  while (true) {
    TESSERA_RETURN_IF_ERROR(run->CheckGoing());
    TESSERA_ASSIGN_OR_RETURN(std::optional<JobBatch> batch, measurer.NextBatch(tuning));
    if (!batch.has_value()) break;
    TESSERA_RETURN_IF_ERROR(run->MarkRunning());
    TESSERA_ASSIGN_OR_RETURN(MeasuredBatch measured, measurer.Measure(tuning->RequestFor(*batch)));
    const TuneSummary before = tuning->Summary();
    TESSERA_RETURN_IF_ERROR(measurer.Commit(tuning, *batch, measured));
    TESSERA_RETURN_IF_ERROR(run->Committed(*batch, before));
  }
  run->Refresh();
  if (run->spec().runoff) TESSERA_RETURN_IF_ERROR(run->RunOffs(&remote));
  return absl::OkStatus();
}

void JobManager::Run(Job* job) {
  absl::Status s = RunJob(job);
  JobState state = JobState::kSucceeded;
  JobEventKind kind = JobEventKind::kJobFinished;
  std::string error;
  if (job->abandoned) {
    // Another server runs it now, or cancelled it (then it dropped the batch; a batch this
    // thread stored since is dropped here).
    absl::StatusOr<JobRow> stored = store_->GetJob(job->id);
    if (stored.ok() && IsFinal(stored->state)) store_->DeleteBatch(job->id).IgnoreError();
    TESSERA_LOG(INFO) << "job " << job->id << ": abandoned by " << owner_;
    std::lock_guard<std::mutex> lock(job->mu);
    job->ended = true;
    job->cv.notify_all();
    return;
  }
  if (job->cancel) {
    state = JobState::kCancelled;
    kind = JobEventKind::kJobCancelled;
    absl::Status dropped = store_->DeleteBatch(job->id);
    if (!dropped.ok()) TESSERA_LOG(ERROR) << "job " << job->id << ": " << dropped;
  } else if (!s.ok() && stopping()) {
    // Left as it is in the store: the next server start resumes it.
    TESSERA_LOG(INFO) << "job " << job->id << ": stopped by the shutdown, resumes on restart";
    std::lock_guard<std::mutex> lock(job->mu);
    job->ended = true;
    job->cv.notify_all();
    return;
  } else if (!s.ok()) {
    state = JobState::kFailed;
    kind = JobEventKind::kJobFailed;
    error = std::string(s.message());
  }
  TESSERA_LOG(INFO) << "job " << job->id << ": " << JobStateName(state)
                    << (error.empty() ? "" : ": ") << error;
  absl::Status stored = store_->SetState(job->id, state, error, Now());
  if (!stored.ok()) TESSERA_LOG(ERROR) << "job " << job->id << ": " << stored;
  UpdateRow(job, [&](JobRow* row) {
    row->state = state;
    row->error = error;
  });
  Emit(job, kind, -1);
  std::lock_guard<std::mutex> lock(job->mu);
  job->ended = true;
  job->cv.notify_all();
}

JobSnapshot JobManager::Decorate(Job* job) {
  JobSnapshot snap;
  std::string unresolved;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    snap = job->snapshot;
    unresolved = job->unresolved_target;
  }
  if (!IsFinal(snap.row.state)) {
    if (!unresolved.empty()) {
      snap.waiting_for = absl::StrCat("no worker for target '", unresolved, "' has registered");
    } else if (!snap.row.target.empty()) {
      snap.waiting_for = dispatcher_->WaitingFor(snap.row.target);
    }
    std::tie(snap.queued, snap.in_flight) = dispatcher_->JobCounts(job->id);
  }
  return snap;
}

absl::StatusOr<JobSnapshot> JobManager::StoredSnapshot(const std::string& id) {
  JobSnapshot snap;
  TESSERA_ASSIGN_OR_RETURN(snap.row, store_->GetJob(id));
  if (snap.row.target.empty()) return snap;
  // A job that ended before this server started: its tasks' progress from its records.
  absl::StatusOr<std::vector<TuneTaskSpec>> tasks = JobTasks(snap.row.spec);
  if (!tasks.ok()) return snap;
  for (const TuneTaskSpec& spec : *tasks) {
    TaskSnapshot t;
    t.workload_hash = StructuralHashHex(spec.func);
    t.summary.name = spec.name;
    t.summary.weight = spec.weight;
    t.summary.flops = std::max(1.0, EstimateFlops(spec.func));
    t.finished = IsFinal(snap.row.state);
    TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db_->FindWorkload(spec.func));
    if (workload.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records,
                               db_->AllRecords(*workload, snap.row.target));
      for (const TuningRecord& r : records) {
        // A runoff's re-measurements are counted by SetTaskBest, not as trials.
        if (r.job_id != id || r.is_retiming()) continue;
        ++t.summary.trials;
        switch (r.error) {
          case MeasureError::kNone:
            break;
          case MeasureError::kBuild:
            ++t.summary.build_errors;
            break;
          case MeasureError::kRun:
            ++t.summary.run_errors;
            break;
          case MeasureError::kTimeout:
            ++t.summary.timeouts;
            break;
          case MeasureError::kWrongOutput:
            ++t.summary.wrong_outputs;
            break;
          case MeasureError::kWorkerLost:
            ++t.summary.workers_lost;
            break;
        }
      }
      absl::StatusOr<Target> target = Target::Parse(snap.row.target);
      if (target.ok()) {
        TESSERA_RETURN_IF_ERROR(SetTaskBest(db_, spec.func, *target, snap.row.spec.verify, id, &t));
        if (t.runoff_records > 0) {
          t.runoff = absl::StrCat(
              t.runoff_records / 2, " round(s); ",
              t.best_changed_by_runoff
                  ? absl::StrCat("the best was record ", t.best_record_id_before_runoff, " before")
                  : std::string("the best is the program it was before"));
        }
      }
    }
    snap.tasks.push_back(std::move(t));
  }
  return snap;
}

absl::StatusOr<JobSnapshot> JobManager::Get(const std::string& id) {
  if (std::shared_ptr<Job> job = FindRunHere(id)) return Decorate(job.get());
  return StoredSnapshot(id);
}

absl::StatusOr<std::vector<JobSnapshot>> JobManager::List(const std::set<JobState>& states,
                                                          int limit) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<JobRow> rows, store_->ListJobs());
  std::vector<JobSnapshot> out;
  for (JobRow& row : rows) {
    if (static_cast<int>(out.size()) >= limit) break;
    JobSnapshot snap;
    if (std::shared_ptr<Job> job = FindRunHere(row.id)) {
      snap = Decorate(job.get());
    } else {
      snap.row = std::move(row);
    }
    if (!states.empty() && !states.count(snap.row.state)) continue;
    out.push_back(std::move(snap));
  }
  return out;
}

absl::StatusOr<JobSnapshot> JobManager::Cancel(const std::string& id) {
  std::shared_ptr<Job> job = FindRunHere(id);
  if (job == nullptr && shared_ != nullptr) {
    // Run by another server: cancelled in the rows; its owner sees it at its next claim
    // renewal and stops.
    TESSERA_ASSIGN_OR_RETURN(JobRow row, store_->GetJob(id));
    if (!IsFinal(row.state)) {
      TESSERA_LOG(INFO) << "job " << id << ": cancel requested (run by another server)";
      TESSERA_RETURN_IF_ERROR(store_->SetState(id, JobState::kCancelled, "", Now()));
      TESSERA_RETURN_IF_ERROR(store_->DeleteBatch(id));
    }
  }
  if (job == nullptr) return StoredSnapshot(id);  // ended before this server started
  bool ended;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    ended = IsFinal(job->snapshot.row.state);
  }
  if (ended) return Decorate(job.get());
  TESSERA_LOG(INFO) << "job " << id << ": cancel requested";
  job->cancel = true;
  dispatcher_->CancelJob(id);
  stop_cv_.notify_all();
  // The thread records the final state; wait briefly so the answer shows it.
  std::unique_lock<std::mutex> lock(job->mu);
  job->cv.wait_for(lock, std::chrono::seconds(5), [&] { return job->ended; });
  lock.unlock();
  return Decorate(job.get());
}

absl::StatusOr<std::vector<JobEvent>> JobManager::Events(const std::string& id, uint64_t after_seq,
                                                         double wait_seconds, bool* ended) {
  std::shared_ptr<Job> job = Find(id);
  if (job == nullptr) {
    TESSERA_RETURN_IF_ERROR(store_->GetJob(id).status());
    *ended = true;  // ended before this server started, or will resume and be found later
    return std::vector<JobEvent>();
  }
  std::unique_lock<std::mutex> lock(job->mu);
  auto has_new = [&] {
    return job->ended || stopping() || (!job->events.empty() && job->events.back().seq > after_seq);
  };
  job->cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, wait_seconds)), has_new);
  std::vector<JobEvent> out;
  for (const JobEvent& e : job->events) {
    if (e.seq > after_seq) out.push_back(e);
  }
  *ended = job->ended;
  return out;
}

}  // namespace tessera
