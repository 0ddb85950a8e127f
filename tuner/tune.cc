#include "tuner/tune.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "cost_model/cost_model.h"
#include "cost_model/features.h"
#include "ir/flops.h"
#include "ir/structural_hash.h"
#include "tuner/search_util.h"
#include "tuner/space_generator.h"
#include "tuner/task_scheduler.h"
#include "worker/check.h"

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

struct TaskRun {
  TuneTaskSpec spec;
  Workload workload;
  std::unique_ptr<SearchStrategy> strategy;
  TaskSummary summary;
  TaskProgress progress;
  double best_this_run_ms = 1e9;  // best measured latency this run (the scheduler's view)
  std::ofstream log;
  // The reference's inputs and outputs (or why they could not be computed), computed at the
  // task's first check and reused by every later one: the interpreter or a naive build takes
  // seconds on large tasks.
  std::optional<absl::StatusOr<ReferenceOutputs>> reference;
};

std::string FileSafe(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// A stored record's program: its full trace replayed on the workload (no postprocessing).
absl::StatusOr<Schedule> ReplayRecord(const PrimFunc& workload, const TuningRecord& record) {
  TESSERA_ASSIGN_OR_RETURN(Trace trace, Trace::FromJson(record.trace_json));
  Schedule sch = Schedule::Create(workload, 0);
  TESSERA_RETURN_IF_ERROR(trace.ApplyTo(&sch, /*remove_postproc=*/false));
  return sch;
}

bool IsBuildFailure(const TuningRecord& record) {
  return record.error_msg.rfind("build:", 0) == 0;
}

// Cost-model samples from stored records (warm start), and the hashes of measured programs.
absl::Status LoadHistory(const TaskRun& task, Database* db, const Target& target,
                         std::unordered_set<std::string>* measured,
                         std::vector<CostSample>* samples) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records,
                           db->AllRecords(task.workload, target.ToString()));
  for (const TuningRecord& record : records) {
    absl::StatusOr<Schedule> sch = ReplayRecord(task.spec.func, record);
    if (!sch.ok()) {
      TESSERA_LOG(WARNING) << task.spec.name << ": stored record " << record.id
                           << " does not replay: " << sch.status();
      continue;
    }
    measured->insert(StructuralHashHex(sch->func()));
    if (IsBuildFailure(record)) continue;
    absl::StatusOr<FeatureMatrix> features = ExtractFeatures(sch->func(), target);
    if (!features.ok() || features->rows == 0) continue;
    MeasureResult result{record.run_secs, record.error_msg};
    samples->push_back(CostSample{task.workload.hash, *std::move(features), result.median_secs()});
  }
  return absl::OkStatus();
}

std::unique_ptr<CostModel> MakeCostModel(const TuneOptions& options) {
  if (options.cost_model == "random") return NewRandomModel(options.seed);
  XGBoostConfig config;
  return NewXGBoostModel(config);
}

std::unique_ptr<SearchStrategy> MakeStrategy(const TuneOptions& options) {
  if (options.strategy == "replay") return NewReplayTrace();
  return NewEvolutionarySearch(options.evolutionary);
}

absl::Status ValidateOptions(const std::vector<TuneTaskSpec>& tasks, const TuneOptions& options) {
  if (tasks.empty()) return absl::InvalidArgumentError("tune: no task");
  if (options.max_trials_global <= 0) {
    return absl::InvalidArgumentError("tune: the trial budget must be positive");
  }
  if (options.num_trials_per_iter <= 0) {
    return absl::InvalidArgumentError("tune: trials per iteration must be positive");
  }
  if (options.strategy != "evolutionary" && options.strategy != "replay") {
    return absl::InvalidArgumentError(absl::StrCat(
        "tune: unknown strategy '", options.strategy, "' (expected evolutionary or replay)"));
  }
  if (options.cost_model != "xgb" && options.cost_model != "random") {
    return absl::InvalidArgumentError(absl::StrCat(
        "tune: unknown cost model '", options.cost_model, "' (expected xgb or random)"));
  }
  return absl::OkStatus();
}

class Tuner {
 public:
  Tuner(Database* db, const TuneOptions& options,
        const std::function<void(const TuneProgress&)>& on_progress)
      : db_(db), options_(options), on_progress_(on_progress) {}

  absl::StatusOr<TuneSummary> Run(const std::vector<TuneTaskSpec>& specs) {
    auto start = Clock::now();
    TESSERA_RETURN_IF_ERROR(ValidateOptions(specs, options_));
    TESSERA_ASSIGN_OR_RETURN(space_, DefaultSpaceConfig(options_.target));
    cost_model_ = MakeCostModel(options_);
    TESSERA_ASSIGN_OR_RETURN(measurer_, Measurer::Create(options_.target, options_.measure));
    TESSERA_ASSIGN_OR_RETURN(scheduler_,
                             MakeTaskScheduler(options_.task_scheduler, options_.seed));
    if (!options_.work_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(options_.work_dir + "/logs", ec);
      if (ec) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tune: cannot create work dir ", options_.work_dir, ": ", ec.message()));
      }
    }
    std::vector<CostSample> history;
    for (size_t i = 0; i < specs.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(InitTask(specs[i], static_cast<int>(i), &history));
    }
    {
      ScopedTimer timer(&times_.cost_model);
      if (!history.empty()) TESSERA_RETURN_IF_ERROR(cost_model_->Update(history));
    }
    TESSERA_RETURN_IF_ERROR(Loop(start));
    TuneSummary summary;
    for (TaskRun& t : tasks_) summary.tasks.push_back(t.summary);
    summary.total_trials = trials_;
    times_.search = 0;
    for (TaskRun& t : tasks_) times_.search += t.strategy->stats().search_seconds;
    if (!options_.work_dir.empty()) {
      absl::Status saved = cost_model_->Save(options_.work_dir + "/cost_model.bin");
      if (!saved.ok()) TESSERA_LOG(WARNING) << "saving the cost model: " << saved;
    }
    times_.wall = SecondsSince(start);
    summary.times = times_;
    return summary;
  }

 private:
  absl::Status InitTask(const TuneTaskSpec& spec, int index, std::vector<CostSample>* history) {
    TaskRun task;
    task.spec = spec;
    task.summary.name = spec.name;
    task.summary.weight = spec.weight;
    task.summary.flops = std::max(1.0, EstimateFlops(spec.func));
    task.progress.weight = spec.weight;
    const std::string target = options_.target.ToString();
    {
      ScopedTimer timer(&times_.database);
      TESSERA_ASSIGN_OR_RETURN(task.workload, db_->CommitWorkload(spec.func));
      TESSERA_ASSIGN_OR_RETURN(std::optional<TuningRecord> best,
                               BestRecord(db_, spec.func, target, /*verified_only=*/true));
      if (best) {
        task.summary.best_secs = best->mean_secs();
        task.summary.best_verified = true;
        task.summary.best_record_id = best->id;
      }
    }
    SearchTask search;
    search.name = spec.name;
    search.workload = spec.func;
    search.space = &space_;
    search.database = db_;
    search.db_workload = task.workload;
    search.target = target;
    search.cost_model = cost_model_.get();
    search.seed = options_.seed * 7919 + index;
    search.num_threads = options_.num_threads > 0
                             ? options_.num_threads
                             : std::max(1u, std::thread::hardware_concurrency());
    TESSERA_RETURN_IF_ERROR(LoadHistory(task, db_, options_.target, &search.measured_hashes,
                                        history));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Schedule> spaces,
                             GenerateDesignSpaces(spec.func, space_, search.seed));
    for (const Schedule& s : spaces) search.design_spaces.push_back(s.trace().Simplified(true));
    if (search.design_spaces.empty()) {
      return absl::InternalError(absl::StrCat("tune: task ", spec.name, " has no design space"));
    }
    int per_task = options_.max_trials_per_task > 0 ? options_.max_trials_per_task
                                                    : options_.max_trials_global;
    task.strategy = MakeStrategy(options_);
    TESSERA_RETURN_IF_ERROR(
        task.strategy->PreTuning(std::move(search), per_task, options_.num_trials_per_iter));
    if (!options_.work_dir.empty()) {
      task.log.open(absl::StrCat(options_.work_dir, "/logs/task_", index, "_",
                                 FileSafe(spec.name), ".log"),
                    std::ios::app);
      task.log << "# task " << spec.name << " on " << target << ", " << spaces.size()
               << " design spaces, " << history->size() << " stored samples so far\n";
    }
    tasks_.push_back(std::move(task));
    return absl::OkStatus();
  }

  absl::Status Loop(Clock::time_point start) {
    int per_task = options_.max_trials_per_task > 0 ? options_.max_trials_per_task
                                                    : options_.max_trials_global;
    while (trials_ < options_.max_trials_global) {
      std::vector<TaskProgress> progress;
      for (TaskRun& t : tasks_) progress.push_back(t.progress);
      int id = scheduler_->NextTaskId(progress);
      if (id < 0) break;
      TaskRun& task = tasks_[id];
      if (task.summary.trials >= per_task) {
        task.progress.terminated = true;
        continue;
      }
      TESSERA_ASSIGN_OR_RETURN(std::vector<MeasureCandidate> candidates,
                               task.strategy->GenerateCandidates());
      int room = options_.max_trials_global - trials_;
      if (static_cast<int>(candidates.size()) > room) {
        candidates.erase(candidates.begin() + room, candidates.end());
      }
      if (candidates.empty()) {
        task.progress.terminated = true;
        continue;
      }
      std::vector<PrimFunc> funcs;
      for (const MeasureCandidate& c : candidates) funcs.push_back(c.sch.func());
      MeasuredBatch batch = measurer_->Measure(
          funcs, std::min(task.summary.best_secs, task.best_this_run_ms / 1e3));
      times_.build += batch.build_seconds;
      times_.run += batch.run_seconds;
      trials_ += static_cast<int>(candidates.size());
      task.summary.trials += static_cast<int>(candidates.size());
      task.strategy->NotifyResults(candidates, batch.results);
      // The measure callbacks, in MetaSchedule's order, then verification and progress.
      TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> record_ids,
                               AddToDatabase(task, candidates, batch));
      TESSERA_RETURN_IF_ERROR(UpdateCostModel(task, candidates, batch));
      TESSERA_RETURN_IF_ERROR(VerifyNewBest(task, candidates, batch, record_ids));
      LogBatch(task, candidates, batch);
      task.progress.best_latency_history.push_back(task.best_this_run_ms);
      if (on_progress_) {
        TuneProgress p;
        p.task = id;
        p.summary = &task.summary;
        p.trials_done = trials_;
        p.trials_budget = options_.max_trials_global;
        p.elapsed = SecondsSince(start);
        p.eta = p.elapsed / trials_ * (options_.max_trials_global - trials_);
        on_progress_(p);
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<int64_t>> AddToDatabase(TaskRun& task,
                                                     const std::vector<MeasureCandidate>& cands,
                                                     const MeasuredBatch& batch) {
    ScopedTimer timer(&times_.database);
    std::vector<int64_t> ids;
    double now = std::chrono::duration<double>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
    for (size_t i = 0; i < cands.size(); ++i) {
      const MeasureResult& r = batch.results[i];
      TuningRecord record;
      record.workload_id = task.workload.id;
      record.target = options_.target.ToString();
      record.trace_json = cands[i].sch.trace().ToJson();
      record.run_secs = r.ok() ? r.run_secs : std::vector<double>();
      record.error_msg = r.ok() ? "" : r.error_msg;
      record.args = ArgInfosOf(task.spec.func);
      record.timestamp = now;
      record.provenance = measurer_->provenance();
      TESSERA_ASSIGN_OR_RETURN(int64_t id, db_->CommitRecord(record));
      ids.push_back(id);
      if (r.ok()) {
        task.best_this_run_ms = std::min(task.best_this_run_ms, r.median_secs() * 1e3);
      } else if (r.error_msg.rfind("build:", 0) == 0) {
        ++task.summary.build_errors;
      } else {
        ++task.summary.run_errors;
      }
    }
    return ids;
  }

  absl::Status UpdateCostModel(const TaskRun& task, const std::vector<MeasureCandidate>& cands,
                               const MeasuredBatch& batch) {
    ScopedTimer timer(&times_.cost_model);
    std::vector<CostSample> samples;
    for (size_t i = 0; i < cands.size(); ++i) {
      const MeasureResult& r = batch.results[i];
      if (!batch.builds[i].ok()) continue;  // build failures teach the model nothing
      absl::StatusOr<FeatureMatrix> f = ExtractFeatures(cands[i].sch.func(), options_.target);
      if (!f.ok() || f->rows == 0) continue;
      samples.push_back(CostSample{task.workload.hash, *std::move(f), r.median_secs()});
    }
    if (samples.empty()) return absl::OkStatus();
    return cost_model_->Update(samples);
  }

  // Checks this batch's fastest candidates that beat the task's verified best, fastest first,
  // until one passes; marks it verified in the database.
  absl::Status VerifyNewBest(TaskRun& task, const std::vector<MeasureCandidate>& cands,
                             const MeasuredBatch& batch, const std::vector<int64_t>& ids) {
    ScopedTimer timer(&times_.verify);
    std::vector<size_t> order;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (batch.results[i].ok()) order.push_back(i);
    }
    auto mean = [&](size_t i) {
      const std::vector<double>& s = batch.results[i].run_secs;
      return std::accumulate(s.begin(), s.end(), 0.0) / s.size();
    };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mean(a) < mean(b); });
    constexpr int kMaxChecksPerBatch = 3;
    int checks = 0;
    for (size_t i : order) {
      if (mean(i) >= task.summary.best_secs || checks == kMaxChecksPerBatch) break;
      bool verified = !options_.verify;
      if (options_.verify) {
        ++checks;
        if (!task.reference) {
          task.reference = ComputeReference(task.spec.func, options_.seed,
                                            options_.measure.runner.timeout_sec);
        }
        absl::StatusOr<CheckOutcome> outcome =
            task.reference->ok()
                ? CheckAgainstReference(cands[i].sch.func(), **task.reference, options_.target,
                                        batch.builds[i], options_.measure.runner.timeout_sec)
                : absl::StatusOr<CheckOutcome>(task.reference->status());
        verified = outcome.ok() && outcome->passed;
        if (!verified) {
          ++task.summary.wrong_outputs;
          std::string why = outcome.ok() ? absl::StrFormat("max abs error %g, %d mismatches",
                                                           outcome->max_abs_error,
                                                           outcome->mismatches)
                                         : std::string(outcome.status().message());
          TESSERA_LOG(WARNING) << task.spec.name << ": candidate (record " << ids[i]
                               << ") does not match the reference: " << why;
          if (task.log.is_open()) {
            task.log << "check FAILED for record " << ids[i] << ": " << why << "\n";
          }
          continue;
        }
        TESSERA_RETURN_IF_ERROR(db_->SetVerified(ids[i], true));
      }
      task.summary.best_secs = mean(i);
      task.summary.best_verified = verified;
      task.summary.best_record_id = ids[i];
      break;
    }
    return absl::OkStatus();
  }

  void LogBatch(TaskRun& task, const std::vector<MeasureCandidate>& cands,
                const MeasuredBatch& batch) {
    if (!task.log.is_open()) return;
    int first = task.summary.trials - static_cast<int>(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) {
      const MeasureResult& r = batch.results[i];
      task.log << "trial " << first + static_cast<int>(i) << ": ";
      if (r.ok()) {
        double secs = r.median_secs();
        task.log << absl::StrFormat("%.4f ms, %.2f GFLOP/s", secs * 1e3,
                                    task.summary.flops / secs / 1e9);
      } else {
        task.log << "FAILED " << r.error_msg << "\n  trace: " << cands[i].sch.trace().ToJson();
      }
      task.log << "\n";
    }
    const SearchStats& stats = task.strategy->stats();
    task.log << "# batch: build " << absl::StrFormat("%.2f", batch.build_seconds) << " s, run "
             << absl::StrFormat("%.2f", batch.run_seconds) << " s; best "
             << absl::StrFormat("%.4f", task.summary.best_secs * 1e3) << " ms; sampled "
             << stats.sampled << ", mutated " << stats.mutated << "\n";
    task.log.flush();
  }

  Database* db_;
  TuneOptions options_;
  std::function<void(const TuneProgress&)> on_progress_;
  SpaceConfig space_;
  std::unique_ptr<CostModel> cost_model_;
  std::unique_ptr<Measurer> measurer_;
  std::unique_ptr<TaskScheduler> scheduler_;
  std::vector<TaskRun> tasks_;
  int trials_ = 0;
  TuneTimes times_;
};

}  // namespace

absl::StatusOr<TuneSummary> Tune(const std::vector<TuneTaskSpec>& tasks, Database* db,
                                 const TuneOptions& options,
                                 const std::function<void(const TuneProgress&)>& on_progress) {
  if (db == nullptr) return absl::InvalidArgumentError("tune: no database");
  Tuner tuner(db, options, on_progress);
  return tuner.Run(tasks);
}

}  // namespace tessera
