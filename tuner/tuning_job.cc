#include "tuner/tuning_job.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/median.h"
#include "base/status_macros.h"
#include "cost_model/cost_model.h"
#include "cost_model/features.h"
#include "ir/flops.h"
#include "ir/structural_hash.h"
#include "rules/default/default_rule.h"
#include "tuner/search_util.h"
#include "tuner/space_generator.h"
#include "tuner/task_scheduler.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Adds the time of a scope to a counter.
class ScopedTimer {
 public:
  explicit ScopedTimer(double* total) : total_(total), start_(Clock::now()) {}
  ~ScopedTimer() { *total_ += SecondsSince(start_); }

 private:
  double* total_;
  Clock::time_point start_;
};

// The scheduler's "nothing succeeded yet" latency (ms), as MetaSchedule's task scheduler uses.
constexpr double kNoLatencyMs = 1e9;

struct TaskRun {
  TuneTaskSpec spec;
  Workload workload;
  std::unique_ptr<SearchStrategy> strategy;
  TaskSummary summary;
  TaskProgress progress;
  double best_this_run_ms = kNoLatencyMs;  // best measured latency (the scheduler's view)
  // The default schedule, when it was never measured here: it leads the task's first batch,
  // so a tuned best is never slower than what `tessera default` gives.
  std::optional<MeasureCandidate> default_candidate;
  // The default schedule's structural hash (measured before or not): the batch holding it asks
  // for its check whatever its time, since `best` may return it (tuner/best_record.h) and shows
  // verified records only; its outcomes give TaskSummary::default_secs.
  std::string default_hash;
  std::ofstream log;
};

std::string FileSafe(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// A trace replayed on the workload with its decisions (no postprocessing re-derived).
absl::StatusOr<Schedule> ReplayTraceJson(const PrimFunc& workload, const std::string& trace_json) {
  TESSERA_ASSIGN_OR_RETURN(Trace trace, Trace::FromJson(trace_json));
  Schedule sch = Schedule::Create(workload, 0);
  TESSERA_RETURN_IF_ERROR(trace.ApplyTo(&sch, /*remove_postproc=*/false));
  return sch;
}

void CountError(MeasureError error, TaskSummary* summary) {
  switch (error) {
    case MeasureError::kNone:
      break;
    case MeasureError::kBuild:
      ++summary->build_errors;
      break;
    case MeasureError::kRun:
      ++summary->run_errors;
      break;
    case MeasureError::kTimeout:
      ++summary->timeouts;
      break;
    case MeasureError::kWrongOutput:
      ++summary->wrong_outputs;
      break;
    case MeasureError::kWorkerLost:
      ++summary->workers_lost;
      break;
  }
}

// The cost model's label of a measurement: the median run (robust to one noisy repeat); failed
// candidates get MetaSchedule's 1e10 seconds, which the model maps to a throughput of ~0.
double CostLabel(const std::vector<double>& run_secs, MeasureError error) {
  if (run_secs.empty() || (error != MeasureError::kNone && error != MeasureError::kWrongOutput)) {
    return 1e10;
  }
  return Median(run_secs);
}

std::unique_ptr<CostModel> NewCostModel(const TuneOptions& options) {
  if (options.cost_model == "random") return NewRandomModel(options.seed);
  XGBoostConfig config;
  config.seed = static_cast<int>(options.seed);
  return NewXGBoostModel(config);
}

std::unique_ptr<SearchStrategy> NewStrategy(const TuneOptions& options) {
  if (options.strategy == "replay") return NewReplayTrace();
  return NewEvolutionarySearch(options.evolutionary);
}

absl::Status ValidateOptions(const std::vector<TuneTaskSpec>& tasks, const TuneOptions& options) {
  if (tasks.empty()) return absl::InvalidArgumentError("tune: no task");
  absl::Status valid = options.Validate(options.target);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat("tune: ", valid.message()));
  return absl::OkStatus();
}

// Records how the task's default schedule fared (the latest measurement counts).
void NoteDefaultOutcome(bool ok, std::optional<double> secs, MeasureError error,
                        const std::string& error_msg, TaskSummary* summary) {
  if (ok && secs) {
    summary->default_secs = *secs;
    summary->default_error.clear();
  } else {
    summary->default_secs.reset();
    summary->default_error = absl::StrCat(MeasureErrorName(error), ": ", error_msg);
  }
}

// One measured batch of one task as the measure callbacks see it: what was measured, the task
// they update, and what an earlier callback left for a later one.
struct MeasuredTaskBatch {
  TaskRun& task;
  const JobBatch& batch;
  const MeasuredBatch& measured;    // one outcome per candidate, in order
  std::vector<int64_t> record_ids;  // AddToDatabase's, one per candidate
};

// What happens after a batch is measured, as MetaSchedule's MeasureCallback: TuningJob::Commit
// runs the job's callbacks in order on each batch (SummarizeBatch, AddToDatabase,
// UpdateCostModel, UpdateBest, LogBatch, UpdateProgress), and stops at the first error.
class MeasureCallback {
 public:
  virtual ~MeasureCallback() = default;
  virtual absl::Status Apply(MeasuredTaskBatch& b) = 0;
};

// The counts and times of the job and the task (trials, the default schedule's outcome, the
// stage times), and the task's strategy told the results.
class SummarizeBatch : public MeasureCallback {
 public:
  SummarizeBatch(int* trials, TuneTimes* times, std::vector<double>* build_secs)
      : trials_(trials), times_(times), build_secs_(build_secs) {}
  absl::Status Apply(MeasuredTaskBatch& b) override {
    TaskRun& task = b.task;
    const std::vector<MeasureCandidate>& candidates = b.batch.candidates;
    const MeasuredBatch& measured = b.measured;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (task.default_hash.empty() || candidates[i].hash != task.default_hash) continue;
      NoteDefaultOutcome(measured.outcomes[i].ok(), measured.outcomes[i].mean_secs(),
                         measured.outcomes[i].error, measured.outcomes[i].error_msg, &task.summary);
    }
    times_->build += measured.build_seconds;
    times_->run += measured.run_seconds;
    times_->verify += measured.verify_seconds;
    for (const MeasureOutcome& o : measured.outcomes) build_secs_->push_back(o.build_secs);
    const int n = static_cast<int>(candidates.size());
    *trials_ += n;
    task.summary.trials += n;
    task.strategy->NotifyResults(candidates, measured.outcomes);
    for (const MeasureCandidate& c : candidates) {
      if (task.default_candidate && c.hash == task.default_candidate->hash) {
        task.default_candidate.reset();  // a restored batch held it
      }
    }
    return absl::OkStatus();
  }

 private:
  int* trials_;
  TuneTimes* times_;
  std::vector<double>* build_secs_;
};

// One record per candidate, tagged with the job's id (MeasuredTaskBatch::record_ids), and the
// task's error counts and best latency this run.
class AddToDatabase : public MeasureCallback {
 public:
  AddToDatabase(Database* db, std::string target, std::string job_id, double* seconds)
      : db_(db), target_(std::move(target)), job_id_(std::move(job_id)), seconds_(seconds) {}
  absl::Status Apply(MeasuredTaskBatch& b) override {
    ScopedTimer timer(seconds_);
    TaskRun& task = b.task;
    const JobBatch& batch = b.batch;
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (size_t i = 0; i < batch.candidates.size(); ++i) {
      const MeasureOutcome& r = b.measured.outcomes[i];
      TuningRecord record;
      record.workload_id = task.workload.id;
      record.target = target_;
      record.trace_json = batch.candidates[i].sch.trace().ToJson();
      record.run_secs = r.run_secs;
      record.error = r.error;
      record.error_msg = r.error_msg;
      record.args = ArgInfosOf(task.spec.func);
      record.timestamp = now;
      record.provenance = r.provenance.value_or(b.measured.provenance);
      record.verified = r.verified;
      record.job_id = job_id_;
      record.stage_secs.build = r.build_secs;
      record.stage_secs.run = r.run_wall_secs;
      record.stage_secs.verify = r.verify_secs;
      record.stage_secs.search =
          batch.search_seconds / static_cast<double>(batch.candidates.size());
      TESSERA_ASSIGN_OR_RETURN(int64_t id, db_->CommitRecord(record));
      b.record_ids.push_back(id);
      CountError(r.error, &task.summary);
      if (r.ok() && r.disturbed) {
        ++task.summary.disturbed;
        task.summary.disturbed_others_busy_cores =
            std::max(task.summary.disturbed_others_busy_cores, r.others_busy_cores);
      }
      if (r.ok()) task.best_this_run_ms = std::min(task.best_this_run_ms, *r.mean_secs() * 1e3);
    }
    return absl::OkStatus();
  }

 private:
  Database* db_;
  const std::string target_;
  const std::string job_id_;
  double* seconds_;  // TuneTimes::database
};

// The job's cost model trained on the batch (build failures and lost workers left out); its
// time counts as the next batch's search too.
class UpdateCostModel : public MeasureCallback {
 public:
  UpdateCostModel(CostModel* model, Target target, double* seconds, double* search_seconds)
      : model_(model),
        target_(std::move(target)),
        seconds_(seconds),
        search_seconds_(search_seconds) {}
  absl::Status Apply(MeasuredTaskBatch& b) override {
    ScopedTimer timer(seconds_);
    ScopedTimer search_timer(search_seconds_);  // the next batch's search
    std::vector<CostSample> samples;
    for (size_t i = 0; i < b.batch.candidates.size(); ++i) {
      const MeasureOutcome& r = b.measured.outcomes[i];
      // Build failures and lost workers teach the model nothing about speed.
      if (r.error == MeasureError::kBuild || r.error == MeasureError::kWorkerLost) continue;
      absl::StatusOr<FeatureMatrix> f = ExtractFeatures(b.batch.candidates[i].sch.func(), target_);
      if (!f.ok() || f->rows == 0) continue;
      samples.push_back(
          CostSample{b.task.workload.hash, *std::move(f), CostLabel(r.run_secs, r.error)});
    }
    if (samples.empty()) return absl::OkStatus();
    return model_->Update(samples);
  }

 private:
  CostModel* model_;
  const Target target_;
  double* seconds_;         // TuneTimes::cost_model
  double* search_seconds_;  // the job's unclaimed search seconds
};

// The task's best: a verified candidate when the job verifies (the measurer checked those that
// beat the best), else the fastest that ran.
class UpdateBest : public MeasureCallback {
 public:
  explicit UpdateBest(bool verify) : verify_(verify) {}
  absl::Status Apply(MeasuredTaskBatch& b) override {
    TaskSummary& summary = b.task.summary;
    for (size_t i = 0; i < b.measured.outcomes.size(); ++i) {
      const MeasureOutcome& r = b.measured.outcomes[i];
      if (!r.ok() || (verify_ && !r.verified)) continue;
      if (summary.best_secs && *r.mean_secs() >= *summary.best_secs) continue;
      summary.best_secs = *r.mean_secs();
      summary.best_verified = r.verified;
      summary.best_record_id = b.record_ids[i];
    }
    return absl::OkStatus();
  }

 private:
  const bool verify_;
};

// A line per record and one for the batch in the task's log, when the job has a work dir.
class LogBatch : public MeasureCallback {
 public:
  absl::Status Apply(MeasuredTaskBatch& b) override {
    TaskRun& task = b.task;
    if (!task.log.is_open()) return absl::OkStatus();
    for (size_t i = 0; i < b.batch.candidates.size(); ++i) {
      const MeasureOutcome& r = b.measured.outcomes[i];
      task.log << "record " << b.record_ids[i] << ": ";
      if (r.ok()) {
        double secs = *r.mean_secs();
        task.log << absl::StrFormat("%.4f ms, %.2f GFLOP/s%s", secs * 1e3,
                                    task.summary.flops / secs / 1e9,
                                    r.verified ? ", verified" : "");
      } else {
        task.log << "FAILED (" << MeasureErrorName(r.error) << ") " << r.error_msg
                 << "\n  trace: " << b.batch.candidates[i].sch.trace().ToJson();
      }
      task.log << "\n";
    }
    const SearchStats& stats = task.strategy->stats();
    task.log << "# batch: build " << absl::StrFormat("%.2f", b.measured.build_seconds) << " s, run "
             << absl::StrFormat("%.2f", b.measured.run_seconds) << " s; best "
             << (task.summary.best_secs ? absl::StrFormat("%.4f ms", *task.summary.best_secs * 1e3)
                                        : std::string("none"))
             << "; sampled " << stats.sampled << ", mutated " << stats.mutated << "\n";
    task.log.flush();
    return absl::OkStatus();
  }
};

// The task scheduler's view of the task: its best latency after this batch.
class UpdateProgress : public MeasureCallback {
 public:
  absl::Status Apply(MeasuredTaskBatch& b) override {
    b.task.progress.best_latency_history.push_back(b.task.best_this_run_ms);
    return absl::OkStatus();
  }
};

}  // namespace

class TuningJob::Impl {
 public:
  Impl(Database* db, TuneOptions options, std::string job_id)
      : db_(db), options_(std::move(options)), job_id_(std::move(job_id)), start_(Clock::now()) {}

  absl::Status Start(std::vector<TuneTaskSpec> specs) {
    TESSERA_RETURN_IF_ERROR(ValidateOptions(specs, options_));
    TESSERA_ASSIGN_OR_RETURN(space_, DefaultSpaceConfig(options_.target, options_.rule_params));
    cost_model_ = NewCostModel(options_);
    // The measure callbacks, in MetaSchedule's order, then the best, the log and the progress.
    callbacks_.push_back(std::make_unique<SummarizeBatch>(&trials_, &times_, &build_secs_));
    callbacks_.push_back(std::make_unique<AddToDatabase>(db_, options_.target.ToString(), job_id_,
                                                         &times_.database));
    callbacks_.push_back(std::make_unique<UpdateCostModel>(
        cost_model_.get(), options_.target, &times_.cost_model, &unclaimed_search_secs_));
    callbacks_.push_back(std::make_unique<UpdateBest>(options_.verify));
    callbacks_.push_back(std::make_unique<LogBatch>());
    callbacks_.push_back(std::make_unique<UpdateProgress>());
    TESSERA_ASSIGN_OR_RETURN(scheduler_, NewTaskScheduler(options_.task_scheduler, options_.seed));
    if (!options_.work_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(options_.work_dir + "/logs", ec);
      if (ec) {
        return absl::InvalidArgumentError(
            absl::StrCat("tune: cannot create work dir ", options_.work_dir, ": ", ec.message()));
      }
    }
    std::vector<CostSample> history;
    for (size_t i = 0; i < specs.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(InitTask(std::move(specs[i]), static_cast<int>(i), &history));
    }
    ChooseBatchSizes();
    const Clock::time_point update_start = Clock::now();
    absl::Status updated = history.empty() ? absl::OkStatus() : cost_model_->Update(history);
    times_.cost_model += SecondsSince(update_start);
    unclaimed_search_secs_ += SecondsSince(update_start);
    return updated;
  }

  absl::StatusOr<std::optional<JobBatch>> NextBatch() {
    while (trials_ < options_.max_trials_global) {
      std::vector<TaskProgress> progress;
      for (TaskRun& t : tasks_) progress.push_back(t.progress);
      int id = scheduler_->NextTaskId(progress);
      if (id < 0) break;
      TaskRun& task = tasks_[id];
      int task_room = PerTaskBudget() - task.summary.trials;
      if (task_room <= 0) {
        task.progress.terminated = true;
        continue;
      }
      // The task's first batch in this job is its warm-up batch (ChooseBatchSizes).
      const int size =
          std::min({task.progress.best_latency_history.empty() ? warmup_batch_ : batch_,
                    options_.max_trials_global - trials_, task_room});
      // The default schedule takes a place of the first batch; the search fills the others.
      const int search_size = size - (task.default_candidate ? 1 : 0);
      std::vector<MeasureCandidate> candidates;
      if (search_size > 0) {
        const Clock::time_point search_start = Clock::now();
        task.strategy->SetBatchSize(search_size);
        TESSERA_ASSIGN_OR_RETURN(candidates, task.strategy->GenerateCandidates());
        // Every generation counts, also an empty one (the next batch pays for it).
        unclaimed_search_secs_ += SecondsSince(search_start);
      }
      if (task.default_candidate) {
        const std::string& hash = task.default_candidate->hash;
        candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                        [&](const MeasureCandidate& c) { return c.hash == hash; }),
                         candidates.end());
        candidates.insert(candidates.begin(), *std::move(task.default_candidate));
        task.default_candidate.reset();
      }
      if (static_cast<int>(candidates.size()) > size) {
        candidates.erase(candidates.begin() + size, candidates.end());
      }
      if (candidates.empty()) {
        task.progress.terminated = true;
        continue;
      }
      JobBatch batch{id, std::move(candidates), unclaimed_search_secs_};
      unclaimed_search_secs_ = 0;
      return std::optional<JobBatch>(std::move(batch));
    }
    finished_ = true;
    return std::optional<JobBatch>();
  }

  MeasureRequest RequestFor(const JobBatch& batch) const {
    const TaskRun& task = tasks_[batch.task];
    MeasureRequest request;
    request.target = options_.target;
    request.workload = task.spec.func;
    for (const MeasureCandidate& c : batch.candidates) {
      if (!task.default_hash.empty() && c.hash == task.default_hash) {
        request.check_always.push_back(request.candidates.size());
      }
      request.candidates.push_back(c.sch.func());
    }
    // With checks, a candidate must beat the verified best to be checked; without, the fastest
    // so far is the bar (nothing is checked).
    request.best_secs = task.summary.best_secs.value_or(0);
    request.verify = options_.verify;
    request.check_seed = options_.seed;
    return request;
  }

  absl::Status Commit(const JobBatch& batch, const MeasuredBatch& measured) {
    if (batch.task < 0 || batch.task >= static_cast<int>(tasks_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("commit: no task ", batch.task));
    }
    if (measured.outcomes.size() != batch.candidates.size()) {
      return absl::InvalidArgumentError(absl::StrCat("commit: ", measured.outcomes.size(),
                                                     " outcomes for ", batch.candidates.size(),
                                                     " candidates"));
    }
    MeasuredTaskBatch b{tasks_[batch.task], batch, measured, {}};
    for (const std::unique_ptr<MeasureCallback>& callback : callbacks_) {
      TESSERA_RETURN_IF_ERROR(callback->Apply(b));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<JobBatch> RestoreBatch(int task_index, const std::vector<std::string>& traces) {
    if (task_index < 0 || task_index >= static_cast<int>(tasks_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("restore batch: no task ", task_index));
    }
    JobBatch batch{task_index, {}};
    for (size_t i = 0; i < traces.size(); ++i) {
      absl::StatusOr<Schedule> sch = ReplayTraceJson(tasks_[task_index].spec.func, traces[i]);
      if (!sch.ok()) {
        return absl::Status(sch.status().code(),
                            absl::StrCat("restore batch: task ", tasks_[task_index].spec.name,
                                         ", candidate ", i, ": ", sch.status().message()));
      }
      batch.candidates.push_back(ToCandidate(*std::move(sch)));
    }
    return batch;
  }

  TuneSummary Summary() const {
    TuneSummary summary;
    for (const TaskRun& t : tasks_) summary.tasks.push_back(t.summary);
    summary.total_trials = trials_;
    summary.warmup_batch_size = warmup_batch_;
    summary.batch_size = batch_;
    summary.warnings = budget_warnings_;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      const TaskSummary& t = tasks_[i].summary;
      const std::string task = absl::StrCat("task ", i, " (", t.name, "): ");
      if (!t.default_error.empty()) {
        summary.warnings.push_back(
            absl::StrCat(task, "the default schedule failed: ", t.default_error));
      }
      if (t.disturbed > 0) summary.warnings.push_back(task + DisturbedWarning(t));
      if (t.trials == 0) {
        if (finished_) summary.warnings.push_back(absl::StrCat(task, "not measured"));
      } else if (!t.best_secs) {
        summary.warnings.push_back(
            absl::StrCat(task, "no valid candidate in ", t.trials, " trial(s)", ErrorCounts(t)));
      }
    }
    summary.times = times_;
    summary.times.search = 0;
    for (const TaskRun& t : tasks_) summary.times.search += t.strategy->stats().search_seconds;
    summary.times.wall = SecondsSince(start_);
    if (!build_secs_.empty()) {
      std::vector<double> sorted = build_secs_;
      std::sort(sorted.begin(), sorted.end());
      summary.times.build_median = Median(sorted);
      summary.times.build_p99 = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
    }
    return summary;
  }

  void SaveCostModel() const {
    if (options_.work_dir.empty()) return;
    absl::Status saved = cost_model_->Save(options_.work_dir + "/cost_model.bin");
    if (!saved.ok()) TESSERA_LOG(WARNING) << "saving the cost model: " << saved;
  }

  bool finished() const { return finished_; }
  int trials() const { return trials_; }
  const TuneOptions& options() const { return options_; }
  const std::vector<TuneTaskSpec>& specs() const { return specs_; }

 private:
  int PerTaskBudget() const { return options_.PerTaskBudget(); }

  // Batch sizes that let the budget reach every task (docs/tuning.md, "Sharing the budget"):
  // later batches hold at most budget / tasks candidates, and each task's first batch (the
  // warm-up: its default schedule and a first search) at most budget / (2 x tasks), so that
  // with two or more tasks at least half the budget is left for the scheduler to give where the
  // weighted latency falls most. A budget of at least 2 x tasks x num_trials_per_iter keeps
  // num_trials_per_iter throughout, as MetaSchedule does.
  void ChooseBatchSizes() {
    const int64_t n = static_cast<int64_t>(tasks_.size());
    const int64_t budget = std::min<int64_t>(options_.max_trials_global, n * PerTaskBudget());
    batch_ = static_cast<int>(
        std::min<int64_t>(options_.num_trials_per_iter, std::max<int64_t>(1, budget / n)));
    warmup_batch_ =
        n >= 2 ? static_cast<int>(std::min<int64_t>(batch_, std::max<int64_t>(1, budget / (2 * n))))
               : batch_;
    if (options_.max_trials_global < n) {
      budget_warnings_.push_back(absl::StrCat(
          "a budget of ", options_.max_trials_global, " trial(s) cannot measure each of the ", n,
          " tasks once: the minimum is ", n, " (one trial per task, its default schedule)"));
      TESSERA_LOG(WARNING) << "tune: " << budget_warnings_.back();
    }
  }

  // What a task's disturbed candidates (t.disturbed > 0) mean. With other programs busy beside
  // them, their times may be off; with none, the kernel's time moved with the process it ran
  // in (on a quiet Zen 4 VM, 19 of 64 RMS norm candidates ran 1.7-2.5x slower in one process
  // than in the next, every repeat alike), which no re-timing removes.
  static std::string DisturbedWarning(const TaskSummary& t) {
    constexpr double kBusyCores = 0.1;  // /proc/stat's 10 ms ticks and daemons stay below it
    const std::string what = absl::StrCat(t.disturbed, " of ", t.trials,
                                          " candidate(s) timed differently in each process beyond "
                                          "the noise");
    if (t.disturbed_others_busy_cores >= kBusyCores) {
      return absl::StrFormat(
          "%s while other programs kept %.1f core(s) busy: their times may be off (each is "
          "ranked by its fastest process)",
          what, t.disturbed_others_busy_cores);
    }
    return absl::StrCat(what,
                        " with no other program seen busy: their time moved with the "
                        "process they ran in (each is ranked by its fastest process)");
  }

  // ": 3 build_error, 5 run_error" for the error kinds a task has; empty if none.
  static std::string ErrorCounts(const TaskSummary& t) {
    std::vector<std::string> parts;
    for (const auto& [count, kind] :
         std::vector<std::pair<int, MeasureError>>{{t.build_errors, MeasureError::kBuild},
                                                   {t.run_errors, MeasureError::kRun},
                                                   {t.timeouts, MeasureError::kTimeout},
                                                   {t.wrong_outputs, MeasureError::kWrongOutput},
                                                   {t.workers_lost, MeasureError::kWorkerLost}}) {
      if (count > 0) parts.push_back(absl::StrCat(count, " ", MeasureErrorName(kind)));
    }
    return parts.empty() ? "" : absl::StrCat(": ", absl::StrJoin(parts, ", "));
  }

  // Cost-model samples from stored records (warm start), the hashes of measured programs, and,
  // for a resumed job, what its own records already count.
  absl::Status LoadHistory(TaskRun* task, std::unordered_set<std::string>* measured,
                           std::vector<CostSample>* samples) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records,
                             db_->AllRecords(task->workload, options_.target.ToString()));
    for (const TuningRecord& record : records) {
      // A runoff's re-measurements (TuningRecord::retimes) are not trials of the job.
      if (!job_id_.empty() && record.job_id == job_id_ && !record.is_retiming()) {
        ++task->summary.trials;
        CountError(record.error, &task->summary);
        if (record.ok()) {
          task->best_this_run_ms = std::min(task->best_this_run_ms, record.mean_secs() * 1e3);
        }
      }
      absl::StatusOr<Schedule> sch = ReplayTraceJson(task->spec.func, record.trace_json);
      if (!sch.ok()) {
        TESSERA_LOG(WARNING) << task->spec.name << ": stored record " << record.id
                             << " does not replay: " << sch.status();
        continue;
      }
      const std::string hash = StructuralHashHex(sch->func());
      measured->insert(hash);
      if (!task->default_hash.empty() && hash == task->default_hash) {
        NoteDefaultOutcome(record.ok(),
                           record.ok() ? std::optional<double>(record.mean_secs()) : std::nullopt,
                           record.error, record.error_msg, &task->summary);
      }
      if (record.error == MeasureError::kBuild) continue;
      absl::StatusOr<FeatureMatrix> features = ExtractFeatures(sch->func(), options_.target);
      if (!features.ok() || features->rows == 0) continue;
      samples->push_back(CostSample{task->workload.hash, *std::move(features),
                                    CostLabel(record.run_secs, record.error)});
    }
    trials_ += task->summary.trials;
    if (task->summary.trials > 0) {
      task->progress.best_latency_history.push_back(task->best_this_run_ms);
    }
    return absl::OkStatus();
  }

  // The schedule of the first default rule that applies to `func`; nullopt when none applies.
  absl::StatusOr<std::optional<MeasureCandidate>> DefaultSchedule(const PrimFunc& func) const {
    for (const DefaultRulePtr& rule : DefaultRulesFor(options_.target)) {
      TESSERA_ASSIGN_OR_RETURN(std::optional<Schedule> sch, rule->Apply(func, options_.target));
      if (!sch) continue;
      return std::optional<MeasureCandidate>(ToCandidate(*std::move(sch)));
    }
    return std::optional<MeasureCandidate>();
  }

  absl::Status InitTask(TuneTaskSpec spec, int index, std::vector<CostSample>* history) {
    specs_.push_back(spec);
    TaskRun task;
    task.spec = std::move(spec);
    task.summary.name = task.spec.name;
    task.summary.weight = task.spec.weight;
    task.summary.flops = std::max(1.0, EstimateFlops(task.spec.func));
    task.progress.weight = task.spec.weight;
    task.progress.flops = task.summary.flops;
    const std::string target = options_.target.ToString();
    {
      ScopedTimer timer(&times_.database);
      TESSERA_ASSIGN_OR_RETURN(task.workload, db_->CommitWorkload(task.spec.func));
      TESSERA_ASSIGN_OR_RETURN(
          std::optional<TuningRecord> best,
          BestRecord(db_, task.spec.func, target, /*verified_only=*/options_.verify));
      if (best) {
        task.summary.best_secs = best->mean_secs();
        task.summary.best_verified = best->verified;
        task.summary.best_record_id = best->id;
      }
    }
    SearchTask search;
    search.name = task.spec.name;
    search.workload = task.spec.func;
    search.space = &space_;
    search.database = db_;
    search.db_workload = task.workload;
    search.target = target;
    search.cost_model = cost_model_.get();
    search.seed = options_.seed * 7919 + index;
    search.num_threads = options_.num_threads > 0
                             ? options_.num_threads
                             : std::max(1u, std::thread::hardware_concurrency());
    const size_t samples_before = history->size();
    TESSERA_ASSIGN_OR_RETURN(std::optional<MeasureCandidate> default_schedule,
                             DefaultSchedule(task.spec.func));
    if (default_schedule) task.default_hash = default_schedule->hash;
    TESSERA_RETURN_IF_ERROR(LoadHistory(&task, &search.measured_hashes, history));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Schedule> spaces,
                             GenerateDesignSpaces(task.spec.func, space_, search.seed));
    for (const Schedule& s : spaces) search.design_spaces.push_back(s.trace().Simplified(true));
    if (search.design_spaces.empty()) {
      return absl::InternalError(
          absl::StrCat("tune: task ", task.spec.name, " has no design space"));
    }
    // Measured before: the database seeds the population with it if it is good.
    if (default_schedule && !search.measured_hashes.count(default_schedule->hash)) {
      search.seeds.push_back(default_schedule->sch.trace());
      task.default_candidate = std::move(default_schedule);
    }
    task.strategy = NewStrategy(options_);
    TESSERA_RETURN_IF_ERROR(task.strategy->PreTuning(
        std::move(search), std::max(0, PerTaskBudget() - task.summary.trials),
        options_.num_trials_per_iter));
    if (!options_.work_dir.empty()) {
      task.log.open(absl::StrCat(options_.work_dir, "/logs/task_", index, "_",
                                 FileSafe(task.spec.name), ".log"),
                    std::ios::app);
      task.log << "# task " << task.spec.name << " on " << target << ", " << spaces.size()
               << " design spaces, " << history->size() - samples_before << " stored samples"
               << (job_id_.empty() ? ""
                                   : absl::StrCat(", job ", job_id_, " has measured ",
                                                  task.summary.trials, " before"))
               << "\n";
    }
    tasks_.push_back(std::move(task));
    return absl::OkStatus();
  }

  Database* db_;
  TuneOptions options_;
  std::string job_id_;
  Clock::time_point start_;
  SpaceConfig space_;
  std::unique_ptr<CostModel> cost_model_;
  std::unique_ptr<TaskScheduler> scheduler_;
  std::vector<std::unique_ptr<MeasureCallback>> callbacks_;  // run by Commit, in order
  std::vector<TuneTaskSpec> specs_;
  std::vector<TaskRun> tasks_;
  int trials_ = 0;
  bool finished_ = false;
  int warmup_batch_ = 1;  // candidates in each task's first batch (ChooseBatchSizes)
  int batch_ = 1;         // ... in the later ones
  std::vector<std::string> budget_warnings_;
  TuneTimes times_;
  std::vector<double> build_secs_;  // per candidate measured this run
  // Search and cost-model time not yet given to a batch (JobBatch::search_seconds).
  double unclaimed_search_secs_ = 0;
};

TuningJob::TuningJob(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningJob::~TuningJob() {
  if (impl_) impl_->SaveCostModel();
}

absl::StatusOr<std::unique_ptr<TuningJob>> TuningJob::Start(std::vector<TuneTaskSpec> tasks,
                                                            Database* db, TuneOptions options,
                                                            std::string job_id) {
  if (db == nullptr) return absl::InvalidArgumentError("tune: no database");
  auto impl = std::make_unique<Impl>(db, std::move(options), std::move(job_id));
  TESSERA_RETURN_IF_ERROR(impl->Start(std::move(tasks)));
  return std::unique_ptr<TuningJob>(new TuningJob(std::move(impl)));
}

absl::StatusOr<std::optional<JobBatch>> TuningJob::NextBatch() { return impl_->NextBatch(); }
MeasureRequest TuningJob::RequestFor(const JobBatch& batch) const {
  return impl_->RequestFor(batch);
}
absl::Status TuningJob::Commit(const JobBatch& batch, const MeasuredBatch& measured) {
  return impl_->Commit(batch, measured);
}
absl::StatusOr<JobBatch> TuningJob::RestoreBatch(int task,
                                                 const std::vector<std::string>& trace_jsons) {
  return impl_->RestoreBatch(task, trace_jsons);
}
bool TuningJob::finished() const { return impl_->finished(); }
int TuningJob::trials() const { return impl_->trials(); }
const TuneOptions& TuningJob::options() const { return impl_->options(); }
const std::vector<TuneTaskSpec>& TuningJob::tasks() const { return impl_->specs(); }
TuneSummary TuningJob::Summary() const { return impl_->Summary(); }

}  // namespace tessera
