// The in-process tuning loop (docs/reference/metaschedule.md §1.3): a TuningJob
// (tuner/tuning_job.h) measured by a LocalMeasurer (worker/measurer.h). For each task, design
// spaces and a search strategy; a task scheduler picks the task of every batch; each batch is
// built, run and its new bests checked against the reference, then committed: every candidate to
// the database (failed ones with their error kind), the cost model, the task's best, progress.
// Running again on the same database continues: programs already measured there are not measured
// again and the cost model starts from the stored records.
#ifndef TESSERA_TUNER_TUNE_H_
#define TESSERA_TUNER_TUNE_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"
#include "tuner/runoff.h"
#include "tuner/search_strategy.h"
#include "tuner/tune_options.h"
#include "worker/measurer.h"

namespace tessera {

struct TuneTaskSpec {
  std::string name;  // for logs and tables, e.g. "GMM(B=1,M=512,N=512,K=512)"
  PrimFunc func;     // the unscheduled function
  double weight = 1;  // how often it occurs in the job
};

// TuningSettings (tuner/tune_options.h: budgets, strategy, cost model, scheduler, seed, verify,
// runoff, rule parameters; validated by its Validate) and what a run in this process adds.
struct TuneOptions : TuningSettings {
  TuneOptions() = default;
  explicit TuneOptions(const TuningSettings& settings) : TuningSettings(settings) {}

  Target target;         // resolved (worker/host.h ResolveTarget)
  int num_threads = 0;   // search threads; <= 0: hardware threads
  std::string work_dir;  // logs/, the cost model; empty: no files besides the database
  MeasureConfig measure;
  EvolutionaryConfig evolutionary;
};

struct TaskSummary {
  std::string name;
  double flops = 0;
  double weight = 1;
  int trials = 0;  // measured by this job (a resumed job counts its earlier runs too)
  int build_errors = 0;
  int run_errors = 0;
  int timeouts = 0;
  int wrong_outputs = 0;  // new bests whose check failed
  int workers_lost = 0;   // quarantined by the service after killing workers
  // Candidates whose processes still disagreed beyond the noise (MeasureOutcome::disturbed).
  int disturbed = 0;
  // The most cores other programs kept busy during a batch of a disturbed candidate
  // (MeasureOutcome::others_busy_cores).
  double disturbed_others_busy_cores = 0;
  // Mean seconds per run of the task's best record (this run or earlier): a verified one when
  // the job verifies, else the fastest that ran; nullopt while there is none.
  std::optional<double> best_secs;
  bool best_verified = false;
  int64_t best_record_id = -1;
  // Mean seconds per run of the task's default schedule (rules/default/), measured in this job's
  // first batch of the task or before; nullopt while it has not run successfully (see
  // default_error).
  std::optional<double> default_secs;
  std::string default_error;  // why the default schedule failed, e.g. "run_error: ..."; or empty
  // With TuningSettings::runoff: its rounds (none when the fastest record was the default's), or
  // why it failed. After rounds, best_secs, best_verified and best_record_id are the record
  // `tessera best` returns and default_secs is the last round's timing of the default, so that
  // the gain compares two timings of one sitting: a job's first timing of the default can be
  // several-fold off the side-by-side one.
  std::vector<Runoff> runoffs;
  std::string runoff_error;
  int errors() const { return build_errors + run_errors + timeouts + wrong_outputs + workers_lost; }
  double gflops() const { return best_secs ? flops / *best_secs / 1e9 : 0; }
  // What the tuning gained over the default schedule: default_secs / best_secs (1 when the best
  // is the default); nullopt unless both are known.
  std::optional<double> gain() const {
    if (!default_secs || !best_secs || *best_secs <= 0) return std::nullopt;
    return *default_secs / *best_secs;
  }
};

// Where the time went (seconds).
struct TuneTimes {
  double wall = 0;
  double build = 0;
  double run = 0;
  double verify = 0;
  double search = 0;      // strategies: sampling, mutation, cost-model ranking
  double cost_model = 0;  // features of measured candidates and training
  double database = 0;
  // Per candidate: code generation and compilation (of the candidates built this run).
  double build_median = 0;
  double build_p99 = 0;
  // Everything outside build, run and verification: the search's own overhead.
  double overhead() const { return wall - build - run - verify; }
};

struct TuneSummary {
  std::vector<TaskSummary> tasks;
  int total_trials = 0;
  TuneTimes times;
  // Candidates per batch (tuner/tuning_job.h): each task's first batch (the warm-up, its default
  // schedule included), then the batches the task scheduler gives out after it.
  int warmup_batch_size = 0;
  int batch_size = 0;
  // For people, one line each: a budget too small to measure every task once (with the
  // minimum), tasks left without a valid candidate or never measured, default schedules that
  // failed.
  std::vector<std::string> warnings;
};

// A progress line after each batch.
struct TuneProgress {
  int task = 0;
  const TaskSummary* summary = nullptr;
  int trials_done = 0;   // all tasks, this run
  int trials_budget = 0;
  double elapsed = 0;
  double eta = 0;  // seconds left, estimated from the time per trial so far
};

absl::StatusOr<TuneSummary> Tune(const std::vector<TuneTaskSpec>& tasks, Database* db,
                                 const TuneOptions& options,
                                 const std::function<void(const TuneProgress&)>& on_progress = {});

// Sets `task`'s runoffs to `rounds` and, when there are rounds, its best and default figures as
// TaskSummary::runoffs says. An error when the database cannot say which record is the best.
absl::Status TakeRunoffFigures(Database* db, const PrimFunc& func, const Target& target,
                               bool verified_only, const std::vector<Runoff>& rounds,
                               TaskSummary* task);

// A model's estimated latency from the summaries of its tasks: the sum over them of weight x
// best (a model job's objective: its kernels run back to back, so `tessera exec` measures close
// to it), and the same sum over the default schedules, whose ratio is the model's gain.
struct ModelEstimate {
  double seconds = 0;
  std::vector<std::string> missing;  // tasks without a best: no estimate while there are any
  double default_seconds = 0;
  int default_missing = 0;  // tasks whose default schedule has no time
};
ModelEstimate EstimateModel(const std::vector<TaskSummary>& tasks);

}  // namespace tessera

#endif  // TESSERA_TUNER_TUNE_H_
