// ReplayTrace: every batch is num_trials_per_iter (or SetBatchSize) independent samples of the
// design spaces (docs/reference/metaschedule.md §5.6), minus programs already measured.
#include <algorithm>
#include <chrono>

#include "tuner/search_strategy.h"
#include "tuner/search_util.h"

namespace tessera {
namespace {

class ReplayTrace : public SearchStrategy {
 public:
  explicit ReplayTrace(int max_fail_count) : max_fail_count_(max_fail_count) {}

  absl::Status PreTuning(SearchTask task, int max_trials, int num_trials_per_iter) override {
    if (task.design_spaces.empty()) {
      return absl::InvalidArgumentError("replay: the task has no design space");
    }
    task_ = std::move(task);
    measured_ = task_.measured_hashes;
    rng_ = Random(task_.seed);
    max_trials_ = max_trials;
    per_iter_ = num_trials_per_iter;
    proposed_ = 0;
    return absl::OkStatus();
  }

  void SetBatchSize(int num_trials_per_iter) override {
    per_iter_ = std::max(1, num_trials_per_iter);
  }

  absl::StatusOr<std::vector<MeasureCandidate>> GenerateCandidates() override {
    auto start = std::chrono::steady_clock::now();
    std::vector<MeasureCandidate> batch;
    int want = std::min(per_iter_, max_trials_ - proposed_);
    int fails = 0;
    while (static_cast<int>(batch.size()) < want && fails < max_fail_count_) {
      int n = want - static_cast<int>(batch.size());
      std::vector<std::optional<MeasureCandidate>> drawn(n);
      std::vector<std::vector<CandidateFailure>> failures(n);
      ParallelFor(n, task_.num_threads, &rng_, [&](int i, Random* rng) {
        drawn[i] = SampleFresh(task_, rng, &failures[i]);
      });
      CountFailures(failures, &stats_);
      stats_.sampled += n;
      int added = 0;
      for (std::optional<MeasureCandidate>& c : drawn) {
        if (c && measured_.insert(c->hash).second) {
          batch.push_back(*std::move(c));
          ++added;
        }
      }
      if (added == 0) ++fails;
    }
    proposed_ += static_cast<int>(batch.size());
    stats_.search_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  int max_fail_count_;
  SearchTask task_;
  std::unordered_set<std::string> measured_;
  Random rng_{1};
  int max_trials_ = 0;
  int per_iter_ = 0;
  int proposed_ = 0;
  SearchStats stats_;
};

}  // namespace

std::unique_ptr<SearchStrategy> NewReplayTrace(int max_fail_count) {
  return std::make_unique<ReplayTrace>(max_fail_count);
}

}  // namespace tessera
