// EvolutionarySearch (docs/reference/metaschedule.md §5.1-5.5): each batch starts from a population
// of the database's best records and fresh samples, evolves it for genetic_num_iters generations
// (fitness-proportional parents, mutation with genetic_mutate_prob), keeps the best predicted
// unmeasured programs in a bounded heap, and fills the batch from them, with an eps_greedy share
// of random fresh samples. Deviations: while the cost model's scores are random (warm-up) the
// population is warmup_population_size, not population_size, no features are extracted, and a
// share of the batch (warmup_neighbour_ratio) is single mutations of the task's seeds (the
// default schedule) and of the best records, the neighbourhood of what is known to be good.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "cost_model/features.h"
#include "schedule/trace.h"
#include "tuner/search_strategy.h"
#include "tuner/search_util.h"

namespace tessera {
namespace {

class EvolutionarySearch : public SearchStrategy {
 public:
  explicit EvolutionarySearch(const EvolutionaryConfig& config) : config_(config) {}

  absl::Status PreTuning(SearchTask task, int max_trials, int num_trials_per_iter) override {
    if (task.design_spaces.empty()) {
      return absl::InvalidArgumentError("evolutionary search: the task has no design space");
    }
    if (task.cost_model == nullptr || task.database == nullptr) {
      return absl::InvalidArgumentError("evolutionary search: needs a cost model and a database");
    }
    task_ = std::move(task);
    measured_ = task_.measured_hashes;
    rng_ = Random(task_.seed);
    max_trials_ = max_trials;
    per_iter_ = num_trials_per_iter;
    proposed_ = 0;
    empty_iters_ = 0;
    target_ = Target::Parse(task_.target).value_or(task_.space->target);
    seeds_.clear();
    for (const Trace& seed : task_.seeds) {
      absl::StatusOr<Schedule> sch = MakeCandidate(task_.workload, seed, task_.space->postprocs,
                                                   rng_.ForkSeed(), /*erase_decisions=*/false);
      if (sch.ok()) seeds_.push_back(ToCandidate(*std::move(sch)));
    }
    return absl::OkStatus();
  }

  void SetBatchSize(int num_trials_per_iter) override {
    per_iter_ = std::max(1, num_trials_per_iter);
  }

  absl::StatusOr<std::vector<MeasureCandidate>> GenerateCandidates() override {
    auto start = std::chrono::steady_clock::now();
    std::vector<MeasureCandidate> batch;
    absl::Status status = Generate(&batch);
    stats_.search_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) return status;
    return batch;
  }

  // Proposed candidates are already in measured_; a batch restored after a restart was not
  // proposed by this strategy.
  void NotifyResults(const std::vector<MeasureCandidate>& candidates,
                     const std::vector<MeasureOutcome>&) override {
    for (const MeasureCandidate& c : candidates) measured_.insert(c.hash);
  }
  const SearchStats& stats() const override { return stats_; }

 private:
  absl::Status Generate(std::vector<MeasureCandidate>* batch) {
    while (proposed_ < max_trials_ && empty_iters_ < kMaxEmptyIters) {
      int sample_num = std::min(per_iter_, max_trials_ - proposed_);
      population_size_ = config_.population_size;
      if (!task_.cost_model->UsesFeatures() && config_.warmup_population_size > 0) {
        // Room for init_min_unmeasured fresh samples next to the database's share.
        int fresh_room = config_.init_measured_ratio < 1
                             ? static_cast<int>(std::ceil(config_.init_min_unmeasured /
                                                          (1 - config_.init_measured_ratio)))
                             : population_size_;
        population_size_ = std::min(
            population_size_, std::max({config_.warmup_population_size, 2 * sample_num,
                                        fresh_room}));
      }
      std::vector<MeasureCandidate> population = PickBestFromDatabase();
      std::vector<MeasureCandidate> unmeasured =
          SampleInitPopulation(population_size_ - static_cast<int>(population.size()));
      if (static_cast<int>(unmeasured.size()) < config_.init_min_unmeasured) {
        TESSERA_LOG(INFO) << task_.name << ": only " << unmeasured.size()
                          << " fresh samples (need " << config_.init_min_unmeasured
                          << "); the search space is exhausted";
        return absl::OkStatus();
      }
      std::vector<MeasureCandidate> neighbours;
      if (!task_.cost_model->UsesFeatures() && config_.warmup_neighbour_ratio > 0) {
        std::vector<MeasureCandidate> parents = population;
        for (const MeasureCandidate& seed : seeds_) parents.push_back(seed);
        neighbours = Neighbours(
            parents, static_cast<int>(std::floor(sample_num * config_.warmup_neighbour_ratio)));
      }
      population.insert(population.end(), unmeasured.begin(), unmeasured.end());
      const int rest = sample_num - static_cast<int>(neighbours.size());
      TESSERA_ASSIGN_OR_RETURN(std::vector<MeasureCandidate> bests,
                               EvolveWithCostModel(std::move(population), rest));
      *batch = std::move(neighbours);
      for (MeasureCandidate& c : PickWithEpsGreedy(unmeasured, bests, rest)) {
        batch->push_back(std::move(c));
      }
      if (!batch->empty()) {
        proposed_ += static_cast<int>(batch->size());
        return absl::OkStatus();
      }
      ++empty_iters_;
    }
    return absl::OkStatus();
  }

  std::vector<MeasureCandidate> PickBestFromDatabase() {
    std::vector<MeasureCandidate> picked;
    int k = static_cast<int>(population_size_ * config_.init_measured_ratio);
    if (k <= 0) return picked;
    absl::StatusOr<std::vector<TuningRecord>> records =
        task_.database->TopK(task_.db_workload, task_.target, k);
    if (!records.ok()) {
      TESSERA_LOG(WARNING) << task_.name << ": reading the database: " << records.status();
      return picked;
    }
    for (const TuningRecord& record : *records) {
      absl::StatusOr<Trace> trace = Trace::FromJson(record.trace_json);
      if (!trace.ok()) continue;
      absl::StatusOr<Schedule> sch = MakeCandidate(task_.workload, *trace, task_.space->postprocs,
                                                   rng_.ForkSeed(), /*erase_decisions=*/false);
      if (sch.ok()) picked.push_back(ToCandidate(*std::move(sch)));
    }
    return picked;
  }

  std::vector<MeasureCandidate> SampleInitPopulation(int num) {
    std::vector<MeasureCandidate> out;
    int fail_rounds = 0;
    while (static_cast<int>(out.size()) < config_.init_min_unmeasured &&
           fail_rounds < config_.max_fail_count) {
      std::vector<std::optional<MeasureCandidate>> drawn(num);
      std::vector<std::vector<CandidateFailure>> failures(num);
      ParallelFor(num, task_.num_threads, &rng_, [&](int i, Random* rng) {
        drawn[i] = SampleFresh(task_, rng, &failures[i]);
      });
      CountFailures(failures, &stats_);
      stats_.sampled += num;
      size_t before = out.size();
      for (std::optional<MeasureCandidate>& c : drawn) {
        if (c) out.push_back(*std::move(c));
      }
      if (out.size() == before) ++fail_rounds;
    }
    return out;
  }

  // Predicted scores (clipped at 0), computed once per distinct program of this batch.
  absl::StatusOr<std::vector<double>> Score(const std::vector<MeasureCandidate>& population) {
    std::vector<int> todo;
    for (size_t i = 0; i < population.size(); ++i) {
      if (!score_cache_.count(population[i].hash)) todo.push_back(static_cast<int>(i));
    }
    std::vector<FeatureMatrix> features(todo.size());
    // A model that does not look at features yet (warm-up: random scores) gets empty ones.
    std::vector<bool> featurized(todo.size(), !task_.cost_model->UsesFeatures());
    if (task_.cost_model->UsesFeatures()) {
      ParallelFor(static_cast<int>(todo.size()), task_.num_threads, &rng_, [&](int j, Random*) {
        absl::StatusOr<FeatureMatrix> f =
            ExtractFeatures(population[todo[j]].sch.func(), target_);
        if (f.ok()) {
          features[j] = *std::move(f);
          featurized[j] = true;
        }
      });
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> predicted, task_.cost_model->Predict(features));
    for (size_t j = 0; j < todo.size(); ++j) {
      score_cache_[population[todo[j]].hash] = featurized[j] ? std::max(0.0, predicted[j]) : 0.0;
    }
    std::vector<double> scores;
    for (const MeasureCandidate& c : population) scores.push_back(score_cache_[c.hash]);
    return scores;
  }

  absl::StatusOr<std::vector<MeasureCandidate>> EvolveWithCostModel(
      std::vector<MeasureCandidate> population, int num) {
    score_cache_.clear();
    std::unordered_set<std::string> exists = measured_;
    // Bounded heap of the `num` best-scored distinct unmeasured programs.
    std::vector<std::pair<double, MeasureCandidate>> heap;
    auto worse = [](const std::pair<double, MeasureCandidate>& a,
                    const std::pair<double, MeasureCandidate>& b) { return a.first > b.first; };
    for (int iter = 0;; ++iter) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<double> scores, Score(population));
      for (size_t i = 0; i < population.size(); ++i) {
        if (!exists.insert(population[i].hash).second) continue;
        if (static_cast<int>(heap.size()) < num) {
          heap.emplace_back(scores[i], population[i]);
          std::push_heap(heap.begin(), heap.end(), worse);
        } else if (!heap.empty() && scores[i] > heap.front().first) {
          std::pop_heap(heap.begin(), heap.end(), worse);
          heap.back() = {scores[i], population[i]};
          std::push_heap(heap.begin(), heap.end(), worse);
        }
      }
      if (iter == config_.genetic_num_iters) break;
      population = Mutate(population, scores);
    }
    std::sort(heap.begin(), heap.end(), [](const auto& a, const auto& b) {
      return a.first > b.first;
    });
    std::vector<MeasureCandidate> bests;
    for (auto& [score, c] : heap) bests.push_back(std::move(c));
    return bests;
  }

  std::vector<MeasureCandidate> Mutate(const std::vector<MeasureCandidate>& population,
                                       const std::vector<double>& scores) {
    const std::vector<WeightedMutator>& mutators = task_.space->mutators;
    double total_weight = 0;
    for (const WeightedMutator& m : mutators) total_weight += m.weight;
    // Index 0: no mutation (copy the parent); 1..n: the mutators.
    std::vector<double> mutator_weights = {1.0};
    if (total_weight > 0) {
      mutator_weights[0] = 1 - config_.genetic_mutate_prob;
      for (const WeightedMutator& m : mutators) {
        mutator_weights.push_back(config_.genetic_mutate_prob * m.weight / total_weight);
      }
    }
    std::vector<double> parent_weights = scores;
    bool any_positive = std::any_of(scores.begin(), scores.end(), [](double s) { return s > 0; });
    if (!any_positive) parent_weights.assign(scores.size(), 1.0);

    int n = population_size_;
    std::vector<std::optional<MeasureCandidate>> next(n);
    std::vector<int> fallback(n, 0);
    std::vector<CandidateFailure> failures(n);
    // A parent is copied unchanged at most once per generation. Slots only record which parent
    // they would copy; the copies are granted afterwards in slot order, so the outcome does not
    // depend on thread timing (P4). A slot refused its copy keeps its fallback parent.
    std::vector<int> copy_wish(n, -1);
    int64_t mutated = 0;
    std::mutex mu;
    ParallelFor(n, task_.num_threads, &rng_, [&](int i, Random* rng) {
      for (int attempt = 0; attempt <= config_.genetic_max_fail_count; ++attempt) {
        int parent = rng->SampleCategorical(parent_weights);
        fallback[i] = parent;
        int m = rng->SampleCategorical(mutator_weights);
        if (m > 0) {
          std::optional<Trace> t = mutators[m - 1].mutator->Apply(
              population[parent].sch.trace(), task_.workload, rng);
          if (!t) continue;
          absl::StatusOr<Schedule> sch =
              MakeCandidate(task_.workload, *t, task_.space->postprocs, rng->ForkSeed(),
                            /*erase_decisions=*/false, &failures[i]);
          if (!sch.ok()) continue;
          next[i] = ToCandidate(*std::move(sch));
          std::lock_guard<std::mutex> lock(mu);
          ++mutated;
          return;
        }
        copy_wish[i] = parent;
        return;
      }
    });
    std::vector<bool> copied(population.size(), false);
    for (int i = 0; i < n; ++i) {
      if (copy_wish[i] < 0 || copied[copy_wish[i]]) continue;
      copied[copy_wish[i]] = true;
      next[i] = population[copy_wish[i]];
    }
    CountFailures(failures, &stats_);
    stats_.mutated += mutated;
    std::vector<MeasureCandidate> out;
    for (int i = 0; i < n; ++i) out.push_back(next[i] ? *std::move(next[i]) : population[fallback[i]]);
    return out;
  }

  // Up to `num` distinct unmeasured programs, each one mutation of a parent (drawn uniformly),
  // marked as proposed. Bounded: at most kNeighbourAttempts tries per program.
  std::vector<MeasureCandidate> Neighbours(const std::vector<MeasureCandidate>& parents, int num) {
    std::vector<MeasureCandidate> out;
    const std::vector<WeightedMutator>& mutators = task_.space->mutators;
    if (parents.empty() || mutators.empty() || num <= 0) return out;
    std::vector<double> weights;
    for (const WeightedMutator& m : mutators) weights.push_back(m.weight);
    for (int attempt = 0; attempt < num * kNeighbourAttempts && static_cast<int>(out.size()) < num;
         ++attempt) {
      const MeasureCandidate& parent =
          parents[rng_.UniformInt(0, static_cast<int64_t>(parents.size()))];
      const WeightedMutator& m = mutators[rng_.SampleCategorical(weights)];
      std::optional<Trace> t = m.mutator->Apply(parent.sch.trace(), task_.workload, &rng_);
      if (!t) continue;
      absl::StatusOr<Schedule> sch = MakeCandidate(task_.workload, *t, task_.space->postprocs,
                                                   rng_.ForkSeed(), /*erase_decisions=*/false);
      if (!sch.ok()) continue;
      MeasureCandidate c = ToCandidate(*std::move(sch));
      if (measured_.insert(c.hash).second) out.push_back(std::move(c));
    }
    stats_.mutated += static_cast<int64_t>(out.size());
    return out;
  }

  std::vector<MeasureCandidate> PickWithEpsGreedy(const std::vector<MeasureCandidate>& unmeasured,
                                                  const std::vector<MeasureCandidate>& bests,
                                                  int num) {
    int num_rands = static_cast<int>(num * config_.eps_greedy);
    int num_bests = num - num_rands;
    std::vector<int> rands(unmeasured.size());
    for (size_t i = 0; i < rands.size(); ++i) rands[i] = static_cast<int>(i);
    rng_.Shuffle(&rands);
    size_t next_best = 0, next_rand = 0;
    std::vector<MeasureCandidate> picks;
    for (int i = 0; i < num; ++i) {
      const MeasureCandidate* c = nullptr;
      bool prefer_best = i < num_bests;
      for (int pass = 0; pass < 2 && c == nullptr; ++pass) {
        bool from_best = (pass == 0) == prefer_best;
        if (from_best && next_best < bests.size()) c = &bests[next_best++];
        if (!from_best && next_rand < rands.size()) c = &unmeasured[rands[next_rand++]];
      }
      if (c == nullptr) break;
      if (measured_.insert(c->hash).second) picks.push_back(*c);
    }
    return picks;
  }

  static constexpr int kMaxEmptyIters = 5;
  static constexpr int kNeighbourAttempts = 8;
  std::vector<MeasureCandidate> seeds_;  // task_.seeds as programs
  EvolutionaryConfig config_;
  SearchTask task_;
  Target target_;
  std::unordered_set<std::string> measured_;
  std::unordered_map<std::string, double> score_cache_;
  Random rng_{1};
  int max_trials_ = 0;
  int per_iter_ = 0;
  int proposed_ = 0;
  int empty_iters_ = 0;
  int population_size_ = 0;  // of this batch: config_.population_size, or the warm-up size
  SearchStats stats_;
};

}  // namespace

std::unique_ptr<SearchStrategy> NewEvolutionarySearch(const EvolutionaryConfig& config) {
  return std::make_unique<EvolutionarySearch>(config);
}

}  // namespace tessera
