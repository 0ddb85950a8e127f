#include "tuner/tune.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "base/status_macros.h"
#include "tuner/best_record.h"
#include "tuner/tuning_job.h"

namespace tessera {

absl::StatusOr<TuneSummary> Tune(const std::vector<TuneTaskSpec>& tasks, Database* db,
                                 const TuneOptions& options,
                                 const std::function<void(const TuneProgress&)>& on_progress) {
  auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<TuningJob> job, TuningJob::Start(tasks, db, options));
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<LocalMeasurer> measurer,
                           LocalMeasurer::Create(options.target, options.measure));
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<JobBatch> batch, job->NextBatch());
    if (!batch) break;
    TESSERA_ASSIGN_OR_RETURN(MeasuredBatch measured, measurer->Measure(job->RequestFor(*batch)));
    TESSERA_RETURN_IF_ERROR(job->Commit(*batch, measured));
    if (on_progress) {
      TuneSummary summary = job->Summary();
      TuneProgress p;
      p.task = batch->task;
      p.summary = &summary.tasks[batch->task];
      p.trials_done = summary.total_trials;
      p.trials_budget = options.max_trials_global;
      p.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      p.eta = p.elapsed / std::max(1, p.trials_done) * (p.trials_budget - p.trials_done);
      on_progress(p);
    }
  }
  TuneSummary summary = job->Summary();
  if (options.runoff) {
    const auto runoff_start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < job->tasks().size() && i < summary.tasks.size(); ++i) {
      absl::StatusOr<std::vector<Runoff>> runoff =
          RunOff(db, job->tasks()[i].func, options.target, /*verified_only=*/options.verify,
                 measurer.get());
      const absl::Status taken = runoff.ok()
                                     ? TakeRunoffFigures(db, job->tasks()[i].func, options.target,
                                                         options.verify, *runoff, &summary.tasks[i])
                                     : runoff.status();
      if (!taken.ok()) summary.tasks[i].runoff_error = std::string(taken.message());
    }
    // The runoff measures: its time counts as running candidates.
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - runoff_start).count();
    summary.times.run += secs;
    summary.times.wall += secs;
  }
  return summary;
}

absl::Status TakeRunoffFigures(Database* db, const PrimFunc& func, const Target& target,
                               bool verified_only, const std::vector<Runoff>& rounds,
                               TaskSummary* task) {
  task->runoffs = rounds;
  if (rounds.empty()) return absl::OkStatus();
  task->default_secs = rounds.back().default_secs;
  TESSERA_ASSIGN_OR_RETURN(std::optional<ChosenRecord> best,
                           BestRecordOrDefault(db, func, target, verified_only));
  if (best) {
    task->best_secs = best->record.mean_secs();
    task->best_verified = best->record.verified;
    task->best_record_id = best->record.id;
  }
  return absl::OkStatus();
}

ModelEstimate EstimateModel(const std::vector<TaskSummary>& tasks) {
  ModelEstimate e;
  for (const TaskSummary& t : tasks) {
    if (t.best_secs) {
      e.seconds += t.weight * *t.best_secs;
    } else {
      e.missing.push_back(t.name);
    }
    if (t.default_secs) {
      e.default_seconds += t.weight * *t.default_secs;
    } else {
      ++e.default_missing;
    }
  }
  return e;
}

}  // namespace tessera
