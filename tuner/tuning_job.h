// A tuning job that advances in steps, so that the same search runs in `tessera tune` (one
// process, tuner/tune.h) and in the server (batches measured by worker daemons):
//
//   job = TuningJob::Start(tasks, db, options, job_id)
//   while (batch = job->NextBatch())            // the task scheduler picks a task, its search
//     measured = measurer->Measure(job->RequestFor(*batch))   //   strategy proposes candidates
//     job->Commit(*batch, measured)             // each measure callback: records, cost
//                                               //   model, best, log, scheduler
//   job->Summary()
//
// The job's state is data: the records it committed (tagged with `job_id`) and the job's
// options. Starting a job again with the same id on the same database resumes it: the trials
// its records hold count against the budgets, its measured programs are never proposed again,
// and the cost model starts from the stored records. A batch that was proposed but not
// committed when the process died is rebuilt from its traces with RestoreBatch.
//
// Every task's first batch starts with its default schedule (rules/default/, what `tessera
// default` gives) unless it was measured before: it is measured and checked like any candidate
// and seeds the population through the database, so a tuned best is never slower than it.
//
// Batch sizes adapt to the budget so that it reaches every task: a task's first batch (its
// warm-up) holds at most budget / (2 x tasks) candidates with two or more tasks, later batches
// at most budget / tasks, never more than num_trials_per_iter nor fewer than 1 (so a budget of
// tasks x 8 gives every task 4 trials in the warm-up, and the task scheduler the other half).
// The gradient scheduler gives every task its first batch before any task gets a second.
// Summary() says per task the trials, the default schedule's and the best latency, and warns
// of a budget below one trial per task and of tasks left without a valid candidate.
//
// Determinism (P4): with the same seed and the same measurements, NextBatch proposes the same
// candidates whatever the number of search threads.
#ifndef TESSERA_TUNER_TUNING_JOB_H_
#define TESSERA_TUNER_TUNING_JOB_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "tuner/search_strategy.h"
#include "tuner/tune.h"
#include "worker/measurer.h"

namespace tessera {

// Candidates of one task, to be measured together.
struct JobBatch {
  int task = -1;  // index into the job's tasks
  std::vector<MeasureCandidate> candidates;
  // Wall seconds spent producing it: the strategy's GenerateCandidates and the cost-model
  // update(s) since the job's previous batch (the model is the job's, shared by its tasks).
  // Committed records get an equal share each (StageSeconds::search); 0 for a restored batch,
  // whose search ran before a restart.
  double search_seconds = 0;
};

class TuningJob {
 public:
  ~TuningJob();
  // Validates the options, stores the workloads, loads each task's history (records measured
  // before, on this target) and generates its design spaces. `job_id` tags every record the
  // job commits; with an id that has records already, the job resumes (see above).
  static absl::StatusOr<std::unique_ptr<TuningJob>> Start(std::vector<TuneTaskSpec> tasks,
                                                          Database* db, TuneOptions options,
                                                          std::string job_id = "");

  // The next batch to measure, or nullopt when the job is finished (the budgets are spent, or
  // every task's space is exhausted).
  absl::StatusOr<std::optional<JobBatch>> NextBatch();
  // What a measurer needs for `batch`: target, workload, candidates, the task's best, checks.
  MeasureRequest RequestFor(const JobBatch& batch) const;
  // Commits the measurements of `batch` (one outcome per candidate, in order) by running the
  // job's measure callbacks on it in order, as MetaSchedule's MeasureCallbacks (tuning_job.cc):
  // the counts and times, records in the database, the cost model, the task's best, the task's
  // log, the scheduler's history.
  absl::Status Commit(const JobBatch& batch, const MeasuredBatch& measured);
  // A batch of task `task` rebuilt from the traces of its candidates (Trace::ToJson of each
  // candidate's schedule). Errors name the candidate whose trace does not replay.
  absl::StatusOr<JobBatch> RestoreBatch(int task, const std::vector<std::string>& trace_jsons);

  bool finished() const;
  int trials() const;  // measured by this job (resumed ones included)
  const TuneOptions& options() const;
  const std::vector<TuneTaskSpec>& tasks() const;
  // Progress so far; times.wall is the time since Start.
  TuneSummary Summary() const;

 private:
  class Impl;
  explicit TuningJob(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_TUNER_TUNING_JOB_H_
