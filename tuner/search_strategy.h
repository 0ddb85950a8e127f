// Search strategies pick which candidates of a task to measure next (docs/reference/metaschedule.md
// §5):
//   - ReplayTrace: independent random samples of the design spaces;
//   - EvolutionarySearch: a population from fresh samples and the database's best records,
//     evolved by mutators, ranked by the cost model, with epsilon-greedy exploration.
// Both never propose a program already measured (in this run or, through the database, in an
// earlier one): candidates are identified by the structural hash of the scheduled function.
#ifndef TESSERA_TUNER_SEARCH_STRATEGY_H_
#define TESSERA_TUNER_SEARCH_STRATEGY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "cost_model/cost_model.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"
#include "schedule/schedule.h"
#include "tuner/space_generator.h"
#include "worker/measurer.h"

namespace tessera {

// A postprocessed schedule ready to build, with its identity.
struct MeasureCandidate {
  Schedule sch;
  std::string hash;  // StructuralHashHex(sch.func())
};

// Everything a strategy needs about its task.
struct SearchTask {
  std::string name;
  PrimFunc workload;
  const SpaceConfig* space = nullptr;
  std::vector<Trace> design_spaces;  // simplified, postproc part removed
  Database* database = nullptr;
  Workload db_workload;
  std::string target;  // Target::ToString(), the database key
  CostModel* cost_model = nullptr;
  // Hashes of programs measured before this run (from the database).
  std::unordered_set<std::string> measured_hashes;
  // Schedules known to be good before anything is measured (the default schedule's trace):
  // warm-up batches explore their neighbourhood (EvolutionaryConfig::warmup_neighbour_ratio).
  std::vector<Trace> seeds;
  int64_t seed = 0;
  int num_threads = 1;
};

struct EvolutionaryConfig {
  int population_size = 512;
  double init_measured_ratio = 0.2;
  int init_min_unmeasured = 50;
  int max_fail_count = 5;
  int genetic_num_iters = 4;
  double genetic_mutate_prob = 0.85;
  int genetic_max_fail_count = 10;
  double eps_greedy = 0.05;
  // Population while the cost model's scores are random (it does not use features yet: fewer
  // than its warm-up samples), at least 2 x the batch: a larger population then only draws
  // more random programs to pick the same batch from at random. <= 0: population_size.
  int warmup_population_size = 64;
  // While the cost model's scores are random, this share of each batch is single mutations of
  // the seeds (the default schedule) and of the best measured records, the rest as above: a
  // random cost model ranks random programs at random, and at 64 trials (one batch) nothing
  // but such a neighbourhood can find a tile next to a strong default. 0 turns it off.
  double warmup_neighbour_ratio = 0.25;
};

// Counters for the progress report and the log.
struct SearchStats {
  double search_seconds = 0;  // time spent inside the strategy
  int64_t sampled = 0;
  int64_t mutated = 0;
  std::map<std::string, int64_t> rejected_by;  // stage ("replay", postproc name) -> count
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Called once before the first batch. `max_trials` bounds the candidates this task proposes.
  virtual absl::Status PreTuning(SearchTask task, int max_trials, int num_trials_per_iter) = 0;
  // The size of the following batches, instead of PreTuning's num_trials_per_iter (the tuning
  // job's batches adapt to its budget, tuner/tuning_job.h). Values below 1 count as 1.
  virtual void SetBatchSize(int num_trials_per_iter) = 0;
  // The next batch (at most the batch size); empty when the task is finished (budget spent, or
  // the space exhausted).
  virtual absl::StatusOr<std::vector<MeasureCandidate>> GenerateCandidates() = 0;
  // The results of the last batch, in order.
  virtual void NotifyResults(const std::vector<MeasureCandidate>& candidates,
                             const std::vector<MeasureOutcome>& outcomes) = 0;
  virtual const SearchStats& stats() const = 0;
};

std::unique_ptr<SearchStrategy> NewReplayTrace(int max_fail_count = 100);
std::unique_ptr<SearchStrategy> NewEvolutionarySearch(
    const EvolutionaryConfig& config = EvolutionaryConfig());

}  // namespace tessera

#endif  // TESSERA_TUNER_SEARCH_STRATEGY_H_
